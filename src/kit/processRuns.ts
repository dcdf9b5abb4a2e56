/**
 * Whether a process of this host still runs, by signal 0 (nothing is sent). EPERM means it runs
 * under another user; only ESRCH (no such process) says it is gone. Lock files, leases and the
 * data folder's owner record each name a pid, and each asks this before taking over from it.
 */
export function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as { code?: unknown }).code === 'EPERM';
  }
}
