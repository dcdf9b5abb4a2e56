import { randomBytes } from 'node:crypto';
import { copyFile, link, lstat, readdir, readlink, rename, rm, rmdir, stat, symlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { ANY_TARGET, type ObjectStore, type OutputLink, PreconditionFailedError } from '../../../src/kit/index.ts';
import { inside, makeFolder, TEMP } from './folderStore.ts';
import { isCode, lockFile } from './lock.ts';

/** How old a temp file of a put in the area is before it is taken for a killed writer's. */
const STALE_TEMP_MS = 60 * 60_000;

/** Temp files of puts killed before their rename (a live put renames within moments). */
async function removeStaleTemps(areaPath: string): Promise<void> {
  for (const name of await readdir(areaPath)) {
    if (!name.startsWith(TEMP)) continue;
    const changed = await stat(join(areaPath, name)).then((s) => s.mtimeMs, () => undefined);
    if (changed !== undefined && Date.now() - changed > STALE_TEMP_MS) await rm(join(areaPath, name), { force: true });
  }
}

/** What `target` answers for an output path that is a folder written by an older sluice (no link yet). */
export const OLDER_LAYOUT = './';

/**
 * The output path `target` as a symbolic link to one commit folder of `area` (the folder
 * `.<name>.sluice` beside it). A swap makes the new link under a temp name and renames it over the
 * output path: rename replaces a link in one step, so a reader resolves the old folder or the new
 * one. Swaps take a lock file in the area, so the conditional check and the rename are one step for
 * every writer of this output.
 *
 * An output folder left by an older sluice (a real folder) is taken over by the first swap: it is
 * moved into the area (and swept once no longer the output), then the link takes its name. That is
 * the one moment the path is absent, once per output; a kill inside it leaves the new link ready in
 * the area (`.takeover`), which the next look at the output puts in place.
 */
export function folderLink(target: string, area: ObjectStore, areaPath: string): OutputLink {
  const relativeArea = basename(areaPath);
  const takeover = join(areaPath, '.takeover');

  async function current(): Promise<string | undefined> {
    const found = await lstat(target).catch((error: unknown) => (isCode(error, 'ENOENT') ? undefined : Promise.reject(error)));
    if (found === undefined) {
      // A takeover killed between its renames: its link goes in now.
      if (await lstat(takeover).then(() => true, () => false)) {
        await rename(takeover, target).catch(() => undefined);
        return current();
      }
      return undefined;
    }
    if (found.isSymbolicLink()) {
      const to = await readlink(target);
      const prefix = `${relativeArea}/`;
      return to.startsWith(prefix) ? `${to.slice(prefix.length)}/` : to;
    }
    if (!found.isDirectory()) return OLDER_LAYOUT;
    return (await readdir(target)).length === 0 ? undefined : OLDER_LAYOUT;
  }

  return {
    area,
    target: () => current(),
    async swap(to, expected) {
      await makeFolder(areaPath);
      const unlock = await lockFile(join(areaPath, '.lock'));
      try {
        const now = await current();
        if (expected !== ANY_TARGET && now !== expected) {
          throw new PreconditionFailedError(`file://${target}`, basename(target), `the output changed since it was read (it points at ${now ?? 'nothing'} now; another writer committed first)`);
        }
        const pointer = `${relativeArea}/${to.replace(/\/$/, '')}`;
        if (now === OLDER_LAYOUT) {
          // Taken over once: the older folder moves into the area and the link takes its name.
          await makeFolder(join(areaPath, 'v'));
          await symlink(pointer, takeover);
          await rename(target, join(areaPath, 'v', `older-${randomBytes(4).toString('hex')}`));
          await rename(takeover, target);
          return;
        }
        // An empty folder in its place is nothing to keep; rename cannot put a link over a folder.
        if (now === undefined) await rmdir(target).catch(() => undefined);
        const tmp = join(areaPath, `.link-${randomBytes(6).toString('hex')}`);
        await symlink(pointer, tmp);
        await rename(tmp, target);
        await removeStaleTemps(areaPath);
      } finally {
        await unlock();
      }
    },
    async carry(names, to) {
      // A hard link: the committed file itself, no copy (a copy where links are refused).
      for (const name of names) {
        const from = inside(target, name);
        const path = inside(areaPath, `${to}${name}`);
        await makeFolder(dirname(path));
        await link(from, path).catch((error: unknown) => {
          if (isCode(error, 'EEXIST')) return;
          if (isCode(error, 'EXDEV') || isCode(error, 'EPERM') || isCode(error, 'ENOTSUP')) return copyFile(from, path);
          throw error;
        });
      }
    },
  };
}
