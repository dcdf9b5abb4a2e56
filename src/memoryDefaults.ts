// Two memory settings that only work when a process starts (docs/operations.md, "Memory"): glibc's
// mmap threshold held at its default (128 KiB), so page-sized buffers are unmapped when freed
// instead of staying in malloc's arenas, each of which keeps its high-water mark (without it a
// long-lived `sluice schedule` creeps up for tens of minutes, one arena at a time); and V8's young
// generation capped (8 MB semi-spaces). bin/sluice.js restarts itself with them; the soak bench
// starts the process it watches with them, so that it measures what `sluice schedule` is.

/** The value of MALLOC_MMAP_THRESHOLD_ set when the environment has none: glibc's own default. */
export const MMAP_THRESHOLD = '131072';
/** The V8 flag added to NODE_OPTIONS when neither it nor the command line caps the semi-spaces. */
export const SEMI_SPACE_FLAG = '--max-semi-space-size=8';

/**
 * The environment to start a process with so that it has both settings, or undefined when it
 * has them already or SLUICE_MEMORY_DEFAULTS=0 turns them off. `execArgv`: the Node flags the
 * process is started with (a semi-space size given there counts as set).
 */
export function memoryDefaults(env: Readonly<Record<string, string | undefined>>, execArgv: readonly string[] = []): Record<string, string | undefined> | undefined {
  if (env.SLUICE_MEMORY_DEFAULTS === '0') return undefined;
  const semiSpaceSet = /--max-semi-space-size/.test(`${env.NODE_OPTIONS ?? ''} ${execArgv.join(' ')}`);
  if (env.MALLOC_MMAP_THRESHOLD_ !== undefined && semiSpaceSet) return undefined;
  return {
    ...env,
    MALLOC_MMAP_THRESHOLD_: env.MALLOC_MMAP_THRESHOLD_ ?? MMAP_THRESHOLD,
    ...(semiSpaceSet ? {} : { NODE_OPTIONS: `${env.NODE_OPTIONS ?? ''} ${SEMI_SPACE_FLAG}`.trim() }),
  };
}
