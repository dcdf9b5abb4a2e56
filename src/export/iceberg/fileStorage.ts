import { randomBytes } from 'node:crypto';
import { createWriteStream, type Dirent } from 'node:fs';
import { link, mkdir, open, readdir, readFile, rename, rm, unlink } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import type { TableStorage } from './storage.ts';

const TEMP = /\.[0-9a-f]{12}\.tmp$/;

/** A table in a local directory. Objects appear by rename; the commit point is an exclusive hard link. */
export function fileTableStorage(directory: string): TableStorage {
  const root = resolve(directory);
  const pathOf = (name: string) => join(root, ...name.split('/'));
  const temp = (path: string) => `${path}.${randomBytes(6).toString('hex')}.tmp`;

  const writeTemp = async (path: string, body: Uint8Array | AsyncIterable<Uint8Array>, signal?: AbortSignal): Promise<{ tmp: string; bytes: number }> => {
    await mkdir(dirname(path), { recursive: true });
    const tmp = temp(path);
    let bytes = 0;
    const counted = async function* () {
      if (body instanceof Uint8Array) {
        bytes = body.byteLength;
        yield body;
        return;
      }
      for await (const chunk of body) {
        bytes += chunk.byteLength;
        yield chunk;
      }
    };
    try {
      const out = createWriteStream(tmp, { flags: 'wx' });
      await pipeline(Readable.from(counted()), out, signal ? { signal } : {});
      const handle = await open(tmp, 'r');
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
    } catch (error) {
      await rm(tmp, { force: true });
      throw error;
    }
    return { tmp, bytes };
  };
  return {
    url: pathToFileURL(root).href,
    async read(name) {
      try {
        return new Uint8Array(await readFile(pathOf(name)));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw error;
      }
    },
    async list(prefix) {
      let entries: Dirent[];
      try {
        entries = await readdir(root, { recursive: true, withFileTypes: true });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
        throw error;
      }
      const names: string[] = [];
      for (const entry of entries) {
        // Temporary files are writes in flight (ours or a concurrent writer's), not objects yet.
        if (!entry.isFile() || TEMP.test(entry.name)) continue;
        const name = relative(root, join(entry.parentPath, entry.name)).split(sep).join('/');
        if (name.startsWith(prefix)) names.push(name);
      }
      return names;
    },
    async createIfAbsent(name, body, signal) {
      const path = pathOf(name);
      const { tmp } = await writeTemp(path, body, signal);
      try {
        // link() fails with EEXIST when the name is taken: an atomic, exclusive publish of complete bytes.
        await link(tmp, path);
        return true;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
        throw error;
      } finally {
        await unlink(tmp).catch(() => undefined);
      }
    },
    async put(name, body, options = {}) {
      const path = pathOf(name);
      const { tmp, bytes } = await writeTemp(path, body, options.signal);
      await rename(tmp, path);
      return bytes;
    },
    async delete(names) {
      await Promise.all(names.map((n) => rm(pathOf(n), { force: true })));
    },
    async close() {},
  };
}
