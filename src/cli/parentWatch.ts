/**
 * Stopping when the process that started sluice is gone. `npx sluice ...` and `npm run ...` run
 * sluice under `npm exec` and a `sh -c` between them: a SIGTERM to npm is forwarded to that shell
 * only, which dies without passing it on, so npm exits ("stopped", says the supervisor) while
 * sluice, re-parented, goes on writing. Under npm, a changed parent pid means the wrapper died,
 * and sluice stops as on SIGTERM. Outside npm the parent is not watched: `nohup` or `disown`
 * mean a process should outlive its parent.
 */

/** How often the parent pid is read (a getppid call: nothing to measure). */
const PARENT_POLL_MS = 500;

/**
 * Whether to watch the parent: `SLUICE_STOP_WITH_PARENT=1` or `0` decides; otherwise only under
 * npm (npx, npm exec, npm run), which sets `npm_command` in the environment of what it runs.
 */
export function shouldWatchParent(env: Readonly<Record<string, string | undefined>>): boolean {
  const set = env.SLUICE_STOP_WITH_PARENT;
  if (set === '1') return true;
  if (set === '0') return false;
  return env.npm_command !== undefined && env.npm_command !== '';
}

/**
 * Calls `onGone(pid)` once when this process's parent changes from the one it has now (it died,
 * and the process was re-parented to init or a subreaper). Returns the function that stops
 * watching. The timer does not keep the process alive.
 */
export function watchParent(onGone: (formerParent: number) => void, pollMs = PARENT_POLL_MS): () => void {
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    onGone(parent);
  }, pollMs);
  timer.unref();
  return () => clearInterval(timer);
}
