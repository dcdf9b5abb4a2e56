import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';

/** Bytes of the files under `dir` (0 when it does not exist); files that vanish while counted are skipped. */
export async function folderBytes(dir: string): Promise<number> {
  let entries;
  try {
    entries = await readdir(dir, { recursive: true, withFileTypes: true });
  } catch {
    return 0;
  }
  let total = 0;
  for (const entry of entries) {
    if (!entry.isFile()) continue;
    try {
      total += (await stat(join(entry.parentPath, entry.name))).size;
    } catch {
      // Removed meanwhile (an expired result, a temporary file).
    }
  }
  return total;
}
