import { randomBytes } from 'node:crypto';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

export interface AtomicWriteOptions {
  /** Permission bits of the file, less the umask (default 0o666); 0o600 for one that holds a secret. */
  readonly mode?: number;
}

/** What a temp file of `writeFileAtomically` has in its name: a folder's leftovers of killed writers can be told apart. */
const TEMP_MARK = '.tmp-';

/** Whether `name` (a file name, no folder) is a temp file `writeFileAtomically` left behind when killed. */
export function isAtomicTemp(name: string): boolean {
  return name.includes(TEMP_MARK);
}

/**
 * Replaces the file at `path` with `body`, atomically and durably: the body goes to a hidden temp
 * file beside it (a name of its own per call, so concurrent writers never share one), which is
 * fsynced, renamed over `path`, and then the folder is fsynced so the rename itself survives a
 * crash. A reader, or a restart after a crash or a kill, sees the old content or the new one, never
 * part of either. On failure the temp file is removed and `path` is left as it was. Missing parent
 * folders are made. Resolves to the bytes written.
 *
 * The one way sluice writes a file that must never be seen half-written: run and backfill state,
 * the service's records and owner file, a query result written with --out.
 */
export async function writeFileAtomically(path: string, body: string | Uint8Array | AsyncIterable<Uint8Array>, options: AtomicWriteOptions = {}): Promise<number> {
  const folder = dirname(path);
  await mkdir(folder, { recursive: true });
  const tmp = join(folder, `.${basename(path)}${TEMP_MARK}${process.pid}-${randomBytes(4).toString('hex')}`);
  let bytes = 0;
  try {
    const handle = await open(tmp, 'wx', options.mode);
    try {
      for await (const chunk of chunksOf(body)) {
        let done = 0;
        while (done < chunk.byteLength) done += (await handle.write(chunk, done)).bytesWritten;
        bytes += chunk.byteLength;
      }
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, path);
  } catch (error) {
    await rm(tmp, { force: true });
    throw error;
  }
  await syncFolder(folder);
  return bytes;
}

/** Writes `value` as JSON (with a final newline) through `writeFileAtomically`; `indent` as in `JSON.stringify`. */
export async function writeJsonAtomically(path: string, value: unknown, options: AtomicWriteOptions & { readonly indent?: number } = {}): Promise<void> {
  await writeFileAtomically(path, `${JSON.stringify(value, null, options.indent)}\n`, options);
}

async function* chunksOf(body: string | Uint8Array | AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
  if (typeof body === 'string') yield Buffer.from(body);
  else if (body instanceof Uint8Array) yield body;
  else yield* body;
}

/**
 * Makes a rename in `folder` durable. Where a folder cannot be opened or synced (Windows), the
 * rename is as durable as that system makes it: nothing more can be done there.
 */
async function syncFolder(folder: string): Promise<void> {
  const handle = await open(folder, 'r').catch(() => undefined);
  if (handle === undefined) return;
  try {
    await handle.sync();
  } catch {
    // EINVAL/EPERM/EISDIR: this system does not sync folders.
  } finally {
    await handle.close();
  }
}
