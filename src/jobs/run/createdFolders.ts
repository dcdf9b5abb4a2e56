import { rmdir, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The folders of local outputs that do not exist yet, deepest first, down to the first that does:
 * those a run may create. A run that ends without committing removes those it left empty, so a
 * stopped or failed run leaves no empty output folder behind (a folder holding anything stays).
 */
export async function missingFolders(paths: readonly string[]): Promise<string[]> {
  const missing: string[] = [];
  for (const path of paths) {
    const local = localFolder(path);
    for (let dir = local; dir !== undefined && dir !== dirname(dir) && !(await exists(dir)); dir = dirname(dir)) missing.push(dir);
  }
  return missing.sort((a, b) => b.length - a.length);
}

/** Removes the folders of `missingFolders` that are there now and empty, deepest first. */
export async function removeEmptyFolders(folders: readonly string[]): Promise<void> {
  for (const dir of folders) {
    // rmdir removes only an empty folder: a folder with anything in it (a resumable run's files) stays.
    await rmdir(dir).catch(() => undefined);
  }
}

/** The folder a local output path names (a path with no scheme, or a file:// URL); undefined for any other. */
function localFolder(path: string): string | undefined {
  if (path.startsWith('file:')) return fileURLToPath(path);
  if (path === '-' || /^[a-z][a-z0-9+.-]*:/i.test(path)) return undefined;
  return resolve(path);
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
