import { mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import {
  type BeginOptions,
  defineSink,
  type Destination,
  DestinationError,
  type Marker,
  type Transaction,
  type WriteOptions,
  type WriteResult,
} from '../../../src/kit/index.ts';

export const fileConfig = z.strictObject({
  url: z
    .string()
    .min(1)
    .refine((u) => !/^[a-z][a-z0-9+.-]*:\/\//i.test(u) || u.startsWith('file://'), 'expected a local directory path or a file:// URL')
    .describe('Directory the export owns: a local path or a file:// URL. Created when missing.'),
});
export type FileConfig = z.output<typeof fileConfig>;

/**
 * Local directory. Guarantee: every stream and marker is written into a sibling staging
 * directory; commit swaps it in with two renames (old away, new in), so a reader sees the
 * complete old output, the complete new output, or (for the instant between the renames) no
 * directory — never a mix. Abort removes the staging directory; the old output is untouched.
 */
export const file = defineSink({
  type: 'file',
  description: 'Local directory, staged in a sibling directory and swapped in by rename.',
  config: fileConfig,
  accepts: (url) => url !== '-' && (url.startsWith('file://') || !/^[a-z][a-z0-9+.-]*:\/\//i.test(url)),
  create: (config: FileConfig) => fileDestination(config.url.startsWith('file://') ? fileURLToPath(config.url) : config.url),
});

export function fileDestination(path: string): Destination {
  const target = resolve(path);
  const url = `file://${target}`;
  return {
    url,
    multiFile: true,
    async read(name) {
      try {
        return new Uint8Array(await readFile(inside(target, name)));
      } catch (error) {
        if (isCode(error, 'ENOENT') || isCode(error, 'ENOTDIR')) return undefined;
        throw new DestinationError(url, `reading ${name} from`, error);
      }
    },
    async begin(options) {
      const staging = join(dirname(target), `.${basename(target)}.sluice-staging-${options.attemptId}`);
      try {
        await mkdir(staging, { recursive: true });
      } catch (error) {
        throw new DestinationError(url, 'creating the staging directory for', error);
      }
      return fileTransaction(target, staging, url, options);
    },
    async close() {},
  };
}

function fileTransaction(target: string, staging: string, url: string, options: BeginOptions): Transaction {
  const inFlight = new Set<Promise<unknown>>();
  const track = <T>(p: Promise<T>): Promise<T> => {
    inFlight.add(p);
    void p.then(
      () => inFlight.delete(p),
      () => inFlight.delete(p),
    );
    return p;
  };

  async function writeStream(name: string, body: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, opts: WriteOptions = {}): Promise<WriteResult> {
    const path = inside(staging, name);
    await mkdir(dirname(path), { recursive: true });
    const handle = await open(path, 'wx');
    let bytes = 0;
    try {
      for await (const chunk of body) {
        opts.signal?.throwIfAborted();
        let done = 0;
        while (done < chunk.byteLength) done += (await handle.write(chunk, done)).bytesWritten;
        bytes += chunk.byteLength;
      }
      // Durable before it can be committed: a crash after the swap must not leave empty files.
      await handle.datasync();
    } finally {
      await handle.close();
    }
    return { bytes };
  }

  return {
    write: (name, body, opts) => track(writeStream(name, body, opts)),

    async commit(markers: readonly Marker[]) {
      await Promise.allSettled([...inFlight]);
      try {
        for (const marker of markers) {
          await writeStream(marker.name, [marker.body]);
        }
      } catch (error) {
        throw new DestinationError(url, 'writing markers to', error);
      }
      const old = `${staging}.old`;
      const existing = await entriesOf(target);
      if (existing !== undefined) {
        const ours = new Set([...options.previous, ...markers.map((m) => m.name)].map((n) => n.split('/')[0]!));
        const foreign = existing.filter((e) => !ours.has(e));
        if (foreign.length > 0) {
          await rm(staging, { recursive: true, force: true });
          throw new DestinationError(
            url,
            'replacing',
            new Error(
              `the directory holds files this export did not write (${foreign.slice(0, 5).join(', ')}${foreign.length > 5 ? ', ...' : ''}); ` +
                'point the export at an empty or sluice-owned directory',
            ),
          );
        }
        await rename(target, old);
      }
      try {
        await rename(staging, target);
      } catch (error) {
        if (existing !== undefined) await rename(old, target).catch(() => undefined);
        throw new DestinationError(url, 'publishing', error);
      }
      if (existing !== undefined) await rm(old, { recursive: true, force: true });
    },

    async abort() {
      await Promise.allSettled([...inFlight]);
      await rm(staging, { recursive: true, force: true }).catch(() => undefined);
    },
  };
}

async function entriesOf(dir: string): Promise<string[] | undefined> {
  try {
    return await readdir(dir);
  } catch (error) {
    if (isCode(error, 'ENOENT')) return undefined;
    throw error;
  }
}

/** Joins a `/`-separated relative name under `root`, refusing names that climb out of it. */
function inside(root: string, name: string): string {
  const path = resolve(root, ...name.split('/'));
  if (isAbsolute(name) || !path.startsWith(root + sep)) throw new Error(`name ${JSON.stringify(name)} escapes ${root}`);
  return path;
}

function isCode(error: unknown, code: string): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === code;
}
