import { randomBytes } from 'node:crypto';
import { link, mkdir, open, readdir, rename, rm, rmdir, stat } from 'node:fs/promises';
import type { BigIntStats } from 'node:fs';
import { dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { type ObjectInfo, type ObjectStore, PreconditionFailedError, type PutCondition } from '../../../src/kit/index.ts';
import { isCode, lockFile } from './lock.ts';

/** Infix of the temp and lock files of a put, never listed as objects. */
export const TEMP = '.sluice-put-';

export interface FolderStoreOptions {
  /**
   * Its listing also names every empty folder, as `name/` (an output's private area: a commit
   * folder a writer made and was killed in before its first file holds nothing a listing of
   * objects would show, so no sweep could find it). `delete` removes such a name once empty.
   */
  readonly emptyFolders?: boolean;
}

/**
 * A local folder as an object store. An object is a file; a put writes a synced temp file at the
 * root and renames it into place (create-only: hard-links it, which fails when the name is
 * taken; replace-if-version: under a lock file, after comparing the version). A version is the
 * file's inode, modification time and size: a put always makes a new file, so it always changes.
 */
export function folderStore(root: string, { emptyFolders = false }: FolderStoreOptions = {}): ObjectStore {
  const url = `file://${root}`;
  return {
    url,
    async get(name) {
      const path = inside(root, name);
      try {
        const handle = await open(path, 'r');
        try {
          const info = await handle.stat({ bigint: true });
          return { body: new Uint8Array(await handle.readFile()), version: versionOf(info) };
        } finally {
          await handle.close();
        }
      } catch (error) {
        if (isCode(error, 'ENOENT') || isCode(error, 'ENOTDIR') || isCode(error, 'EISDIR')) return undefined;
        throw error;
      }
    },
    async put(name, body, options = {}) {
      const path = inside(root, name);
      await makeFolder(dirname(path));
      // At the root, never inside a folder of objects: a commit folder a killed writer left holds no temp file to publish.
      const tmp = join(root, `${TEMP}${randomBytes(6).toString('hex')}.tmp`);
      try {
        const bytes = await writeNewFile(tmp, body instanceof Uint8Array ? [body] : body, options.signal, options.durable !== false);
        // A sweep removes an empty folder it takes for a dead writer's; a writer whose lease it had
        // not seen yet (its put still in flight) makes the folder again.
        for (let tries = 1; ; tries++) {
          try {
            await publish(tmp, path, name, url, options.condition);
            break;
          } catch (error) {
            if (!isCode(error, 'ENOENT') || tries === 3) throw error;
            await makeFolder(dirname(path));
          }
        }
        return { bytes, version: versionOf(await stat(path, { bigint: true })) };
      } catch (error) {
        // Published, the temp file is gone (renamed); not published, it goes now.
        await rm(tmp, { force: true });
        if (options.signal?.aborted) throw options.signal.reason;
        throw error;
      }
    },
    async head(name) {
      return infoOf(inside(root, name));
    },
    async list(prefix) {
      // Start below the prefix's folder and enter only folders the prefix can reach: a commit's
      // folder is listed without the others, the writers' leases without any folder.
      const from = prefix.includes('/') ? prefix.slice(0, prefix.lastIndexOf('/')) : '';
      const names: string[] = [];
      const walk = async (dir: string, under: string): Promise<void> => {
        let entries;
        try {
          entries = await readdir(dir, { withFileTypes: true });
        } catch (error) {
          // Removed while the walk went through it: its objects are gone, not the listing.
          if (isCode(error, 'ENOENT') || isCode(error, 'ENOTDIR')) return;
          throw error;
        }
        // Read anyway: an empty folder costs the listing no call of its own.
        if (emptyFolders && entries.length === 0 && under !== '' && `${under}/`.startsWith(prefix) && `${under}/` !== prefix) names.push(`${under}/`);
        await Promise.all(
          entries.map(async (entry) => {
            const name = under === '' ? entry.name : `${under}/${entry.name}`;
            if (entry.isDirectory() && (`${name}/`.startsWith(prefix) || prefix.startsWith(`${name}/`))) await walk(join(dir, entry.name), name);
            else if (entry.isFile() && !entry.name.includes(TEMP) && name.startsWith(prefix)) names.push(name);
          }),
        );
      };
      await walk(from === '' ? root : inside(root, from), from);
      return names;
    },
    async delete(names) {
      const files = names.filter((n) => !n.endsWith('/'));
      await Promise.all(files.map((n) => rm(inside(root, n), { force: true })));
      // Folders emptied by it go too (a failed first write leaves the folder as it found it).
      const dirs = new Set(files.flatMap((n) => n.split('/').slice(0, -1).map((_, i, parts) => parts.slice(0, i + 1).join('/'))));
      for (const dir of [...dirs].sort((a, b) => b.length - a.length)) await rmdir(inside(root, dir)).catch(() => undefined);
      // A name ending in `/` is a folder: it goes once empty (deepest first, so one inside another
      // goes before it), its parents stay (others write beside it).
      for (const folder of names.filter((n) => n.endsWith('/')).sort((a, b) => b.length - a.length)) await rmdir(inside(root, folder.slice(0, -1))).catch(() => undefined);
      if (files.length > 0) await rmdir(root).catch(() => undefined);
    },
    async close() {},
  };
}

async function publish(tmp: string, path: string, name: string, url: string, condition: PutCondition | undefined): Promise<void> {
  if (condition === undefined) return rename(tmp, path);
  if ('ifAbsent' in condition) {
    try {
      await link(tmp, path);
      // The temp name of the file goes; the file stays under its own.
      await rm(tmp, { force: true });
      return;
    } catch (error) {
      if (isCode(error, 'EEXIST')) throw new PreconditionFailedError(url, name, `${name} exists already (another writer published it first)`);
      throw error;
    }
  }
  const unlock = await lockFile(join(dirname(path), `${TEMP}${name.split('/').pop()}.lock`));
  try {
    if ((await infoOf(path))?.version !== condition.ifVersion) throw new PreconditionFailedError(url, name, `${name} changed since it was read (another writer published first)`);
    await rename(tmp, path);
  } finally {
    await unlock();
  }
}

async function infoOf(path: string): Promise<ObjectInfo | undefined> {
  try {
    const info = await stat(path, { bigint: true });
    if (!info.isFile()) return undefined;
    return { size: Number(info.size), version: versionOf(info), modified: Number(info.mtimeMs) };
  } catch (error) {
    if (isCode(error, 'ENOENT') || isCode(error, 'ENOTDIR')) return undefined;
    throw error;
  }
}

function versionOf(info: BigIntStats): string {
  return `${info.ino}-${info.mtimeNs}-${info.size}`;
}

/** Writes `body` into a new file at `path` (never an existing one) and, with `sync`, syncs it to disk: the bytes written. */
export async function writeNewFile(path: string, body: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, signal: AbortSignal | undefined, sync = true): Promise<number> {
  const handle = await open(path, 'wx');
  let bytes = 0;
  try {
    for await (const chunk of body) {
      signal?.throwIfAborted();
      let done = 0;
      while (done < chunk.byteLength) done += (await handle.write(chunk, done)).bytesWritten;
      bytes += chunk.byteLength;
    }
    // Durable before it can be committed: a crash after the commit must not leave empty files.
    if (sync) await handle.datasync();
  } finally {
    await handle.close();
  }
  return bytes;
}

/**
 * Makes a folder and its missing parents one level at a time. Node's recursive mkdir retries for
 * ever where a level cannot be made but is reported missing (under /proc); this fails at once.
 */
export async function makeFolder(path: string): Promise<void> {
  const missing: string[] = [];
  for (let dir = path; ; dir = dirname(dir)) {
    const found = await stat(dir).catch((error: unknown) => (isCode(error, 'ENOENT') || isCode(error, 'ENOTDIR') ? undefined : Promise.reject(error)));
    if (found !== undefined && !found.isDirectory()) throw Object.assign(new Error(`${dir} is a file, so no folder can be made under it`), { code: 'ENOTDIR', path: dir });
    if (found !== undefined) break;
    missing.unshift(dir);
    if (dirname(dir) === dir) break;
  }
  for (const dir of missing) {
    await mkdir(dir).catch((error: unknown) => {
      if (!isCode(error, 'EEXIST')) throw error;
    });
  }
}

/** Joins a `/`-separated relative name under `root`, refusing names that climb out of it. */
export function inside(root: string, name: string): string {
  const path = resolve(root, ...name.split('/'));
  if (isAbsolute(name) || !path.startsWith(root + sep)) throw new Error(`name ${JSON.stringify(name)} escapes ${root}`);
  return path;
}

