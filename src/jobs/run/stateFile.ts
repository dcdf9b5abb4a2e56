import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * Writes a state file (the run state, a backfill's chunk records) as JSON, atomically: to a temp
 * file beside it, then renamed over it, so a kill leaves the old state or the new one, never a torn
 * one. The one way src/jobs writes its state files.
 */
export async function writeJsonAtomically(file: string, value: unknown): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, `${JSON.stringify(value, null, 2)}\n`);
  await rename(tmp, file);
}
