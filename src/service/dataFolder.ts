// The data folder holds every team's tables, uploads, stored results, saved-query SQL and the
// credit ledger: it is the service's alone. The folder is 0700, so no other local account can
// even list it, and what is in it is 0700 (folders) / 0600 (files), so a folder loosened later
// (a copy, a backup restored with another umask) does not expose what was written meanwhile.
// DuckDB creates its own files with the process's umask; they are reached only through the
// folder, and tightened at every start with the rest.
import { chmod, lstat, mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';

export const FOLDER_MODE = 0o700;
export const FILE_MODE = 0o600;
/** Group and other bits: none of them is wanted on anything in the data folder. */
const OTHERS = 0o077;

/**
 * Creates the data folder 0700, or tightens a folder found with group or other bits (and says so
 * through `warn`: whatever it held was readable until now). Called before the databases open.
 */
export async function secureDataFolder(dir: string, warn: (message: string) => void): Promise<void> {
  await mkdir(dir, { recursive: true, mode: FOLDER_MODE });
  // Windows has no mode bits to speak of (ACLs decide): nothing to check or tighten there.
  if (process.platform === 'win32') return;
  const mode = (await lstat(dir)).mode & 0o777;
  if ((mode & OTHERS) === 0) return;
  await chmod(dir, FOLDER_MODE);
  warn(`the data folder ${dir} was readable by other accounts (mode ${mode.toString(8).padStart(4, '0')}); it is now 0700 and its contents owner-only`);
}

/**
 * Takes group and other bits off every folder and file under `dir` (symlinks are left alone:
 * chmod would follow them out of the folder). Returns how many entries it changed.
 */
export async function tightenContents(dir: string): Promise<number> {
  let changed = 0;
  if (process.platform === 'win32') return changed;
  const walk = async (at: string): Promise<void> => {
    let names: string[];
    try {
      names = await readdir(at);
    } catch {
      return;
    }
    for (const name of names) {
      const path = join(at, name);
      const st = await lstat(path).catch(() => undefined);
      if (st === undefined || st.isSymbolicLink()) continue;
      if ((st.mode & OTHERS) !== 0) {
        // A file removed meanwhile (a result expiring) is no longer anyone's concern.
        const ok = await chmod(path, st.mode & 0o700).then(
          () => true,
          () => false,
        );
        if (ok) changed += 1;
      }
      if (st.isDirectory()) await walk(path);
    }
  };
  await walk(dir);
  return changed;
}
