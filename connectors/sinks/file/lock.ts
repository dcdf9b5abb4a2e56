import { randomBytes } from 'node:crypto';
import { link, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { processRuns } from '../../../src/kit/index.ts';

const LOCK_WAIT_MS = 10_000;

/**
 * Takes the lock file `path` (an exclusive hard link of a file naming this process), waiting while
 * a running process holds it; a lock whose process is gone is taken over. Resolves to its release.
 */
export async function lockFile(path: string): Promise<() => Promise<void>> {
  const deadline = Date.now() + LOCK_WAIT_MS;
  // The owner is written first and the lock linked into place whole: a lock is never seen empty.
  const mine = `${path}.${randomBytes(6).toString('hex')}`;
  await writeFile(mine, `${hostname()} ${process.pid}\n`);
  try {
    for (;;) {
      try {
        await link(mine, path);
        return () => rm(path, { force: true });
      } catch (error) {
        if (!isCode(error, 'EEXIST')) throw error;
      }
      if (!(await ownerRuns(path))) {
        // Taken over by moving it aside first: of two processes doing so, one gets ENOENT and waits.
        const aside = `${path}.${randomBytes(6).toString('hex')}.stale`;
        if (await rename(path, aside).then(() => true, () => false)) await rm(aside, { force: true });
        continue;
      }
      if (Date.now() > deadline) throw new Error(`${path} is held by a running process`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  } finally {
    await rm(mine, { force: true });
  }
}

/** Whether the process a file names (`host pid`) still runs (another host's: not known, taken as gone). */
async function ownerRuns(file: string): Promise<boolean> {
  const [host, pidText] = (await readFile(file, 'utf8').catch(() => '')).trim().split(' ');
  const pid = Number(pidText);
  if (host !== hostname() || !Number.isInteger(pid) || pid <= 0) return false;
  if (pid === process.pid) return true;
  return processRuns(pid);
}

export function isCode(error: unknown, code: string): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === code;
}
