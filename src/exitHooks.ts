// What must happen even when a command is stopped at once (a second Ctrl-C): files that would
// otherwise outlive the process and block the next run (a job's lock file) are removed, and native
// work is stopped before the process exits (ending a thread or the process while DuckDB has a
// call in flight aborts it, exit 134, instead of exiting with the code the user expects).
//
// A hook is registered by whoever creates the thing and unregistered when it is released the
// ordinary way. `runExitHooks` is called once, just before process.exit.

/** Removes something synchronously (a lock file): runs first, and always. */
type SyncHook = () => void;
/** Stops native work; awaited, but no longer than the exit's bound. */
type StopHook = () => Promise<void>;

const syncHooks = new Set<SyncHook>();
const stopHooks = new Set<StopHook>();

/** Registers a synchronous cleanup; returns its removal. */
export function onExitRemove(hook: SyncHook): () => void {
  syncHooks.add(hook);
  return () => syncHooks.delete(hook);
}

/** Registers the stop of native work (an embedded service); returns its removal. */
export function onExitStop(hook: StopHook): () => void {
  stopHooks.add(hook);
  return () => stopHooks.delete(hook);
}

/**
 * Runs every synchronous cleanup, then every stop hook at once, waiting at most `boundMs` for
 * them. Errors are swallowed: the process is exiting, and each hook is a best effort.
 */
export async function runExitHooks(boundMs: number): Promise<void> {
  for (const hook of [...syncHooks]) {
    try {
      hook();
    } catch {
      // best effort: the next run takes over a lock whose process is gone
    }
  }
  syncHooks.clear();
  const stops = [...stopHooks].map((hook) => hook().catch(() => undefined));
  stopHooks.clear();
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([Promise.all(stops), new Promise((resolve) => (timer = setTimeout(resolve, boundMs)))]);
  clearTimeout(timer);
}

/** How long an exit waits for the stop hooks before it exits anyway. */
export const EXIT_HOOKS_BOUND_MS = 5_000;

/**
 * Exits with `code` once the exit hooks have run (at most `EXIT_HOOKS_BOUND_MS`): what every exit
 * of the process that is not Node's own wind-down goes through.
 */
export async function exitAfterHooks(code: number): Promise<never> {
  try {
    await runExitHooks(EXIT_HOOKS_BOUND_MS);
  } finally {
    process.exit(code);
  }
}
