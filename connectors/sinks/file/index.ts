import { createHash, randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { access, copyFile, link, mkdir, open, readdir, readFile, rename, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import {
  type BeginOptions,
  defineSink,
  type Destination,
  DestinationCheckError,
  DestinationError,
  type Marker,
  PreconditionFailedError,
  type PublishCondition,
  type StagedStream,
  type Transaction,
  type WriteOptions,
  type WriteResult,
} from '../../../src/kit/index.ts';
import { fileSharedArea } from './shared.ts';

/**
 * A file:// URL or a path without any scheme: `s3://...`, `gs://...` and slips such as `s3:/x` belong
 * to other sinks or to none, never to a local directory named `s3:`. A one-letter "scheme" is a
 * drive (`C:\out`).
 */
function isLocal(url: string): boolean {
  return url.startsWith('file://') || !/^[a-z][a-z0-9+.-]+:/i.test(url);
}

export const fileConfig = z.strictObject({
  url: z
    .string()
    .min(1)
    .refine(isLocal, 'expected a local directory path or a file:// URL')
    .describe('Directory the export owns: a local path or a file:// URL. Created when missing.'),
});
export type FileConfig = z.output<typeof fileConfig>;

/**
 * Local directory. Guarantee: every stream and marker is written into a sibling staging
 * directory; commit swaps it in with two renames (old away, new in), so a reader sees the
 * complete old output, the complete new output, or (for the instant between the renames) no
 * directory — never a mix. Abort removes the staging directory; the old output is untouched.
 *
 * Resume: the staging directory is named after the attempt id, so a run killed (or stopped:
 * `suspend` settles its writes and leaves the directory as a kill would) mid-export
 * leaves `.<dir>.sluice-staging-<attemptId>` behind; a later `begin` with the same id and
 * `resume` reopens it (its journal, its complete files). Staging directories of other attempts
 * of the same output are removed at `begin` unless their owner (host and pid, written at
 * begin) is still running.
 */
export const file = defineSink({
  type: 'file',
  description: 'Local directory, staged in a sibling directory and swapped in by rename.',
  paths: 'a local directory or file:// URL',
  config: fileConfig,
  accepts: (url) => url !== '-' && isLocal(url),
  create: (config: FileConfig) => fileDestination(config.url.startsWith('file://') ? fileURLToPath(config.url) : config.url),
});

export function fileDestination(path: string): Destination {
  const target = resolve(path);
  const url = `file://${target}`;
  const parent = dirname(target);
  const prefix = `.${basename(target)}.sluice-staging-`;
  // Before anything reads the committed output: undo a commit killed between its renames.
  let restored: Promise<void> | undefined;
  const restore = (): Promise<void> => (restored ??= restoreAside(parent, prefix, target));
  const destination: Destination = {
    url,
    multiFile: true,
    async check(_signal, options = {}) {
      await checkWritable(target, url, options.records ?? MANIFEST_RECORDS);
    },
    async read(name) {
      try {
        await restore();
        return new Uint8Array(await readFile(inside(target, name)));
      } catch (error) {
        if (isCode(error, 'ENOENT') || isCode(error, 'ENOTDIR')) return undefined;
        throw new DestinationError(url, `reading ${name} from`, error);
      }
    },
    async readVersioned(name) {
      try {
        await restore();
        const body = new Uint8Array(await readFile(inside(target, name)));
        return { body, version: versionOf(body) };
      } catch (error) {
        if (isCode(error, 'ENOENT') || isCode(error, 'ENOTDIR')) return undefined;
        throw new DestinationError(url, `reading ${name} from`, error);
      }
    },
    async list(prefix) {
      try {
        await restore();
        const entries = await readdir(target, { recursive: true, withFileTypes: true });
        return entries
          .filter((e) => e.isFile())
          .map((e) => relative(target, join(e.parentPath, e.name)).split(sep).join('/'))
          .filter((n) => n.startsWith(prefix) && !n.includes(PUBLISHING))
          .sort();
      } catch (error) {
        if (isCode(error, 'ENOENT')) return [];
        throw new DestinationError(url, `listing ${prefix || 'the files'} in`, error);
      }
    },
    async publish(name, body, condition, options = {}) {
      options.signal?.throwIfAborted();
      await restore();
      return publishFile(url, inside(target, name), name, body, condition);
    },
    async put(name, body, options = {}) {
      options.signal?.throwIfAborted();
      await restore();
      return putFile(url, inside(target, name), name, body, options.signal);
    },
    async remove(names) {
      try {
        await Promise.all(names.map((n) => rm(inside(target, n), { force: true })));
        // Directories emptied by it go too (a failed first write leaves the folder as it found it).
        const dirs = new Set(names.flatMap((n) => n.split('/').slice(0, -1).map((_, i, parts) => parts.slice(0, i + 1).join('/'))));
        for (const dir of [...dirs].sort((a, b) => b.length - a.length)) await rmdir(inside(target, dir)).catch(() => undefined);
      } catch (error) {
        throw new DestinationError(url, `removing ${names.length} files from`, error);
      }
    },
    async sweep() {
      try {
        await restore();
        await removeStale(parent, prefix, undefined, target);
      } catch (error) {
        throw new DestinationError(url, 'removing what earlier runs left beside', error);
      }
    },
    async begin(options) {
      const staging = join(parent, `${prefix}${options.attemptId}`);
      let journal: Uint8Array | undefined;
      try {
        await mkdir(parent, { recursive: true });
        await restore();
        await removeStale(parent, prefix, options.attemptId, target);
        if (options.resume) journal = await readFile(join(staging, JOURNAL)).then((b) => new Uint8Array(b), () => undefined);
        // Nothing to resume: whatever a killed attempt with this id staged is discarded.
        if (journal === undefined) await rm(staging, { recursive: true, force: true });
        await mkdir(staging, { recursive: true });
        // Whole or absent, never empty or half-written, to another writer's sweep reading it.
        await writeFile(join(staging, `${OWNER}.tmp`), `${hostname()} ${process.pid}\n`);
        await rename(join(staging, `${OWNER}.tmp`), join(staging, OWNER));
      } catch (error) {
        throw new DestinationError(url, 'creating the staging directory for', error);
      }
      return fileTransaction(target, staging, url, options, journal);
    },
    shared(id) {
      return fileSharedArea(target, url, id, (options) => destination.begin(options), (attemptId) => join(parent, `${prefix}${attemptId}`));
    },
    async close() {},
  };
  return destination;
}

/** The records of the manifest commit: a folder holding one of them was written by sluice. */
const MANIFEST_RECORDS = ['_manifest.json', '_SUCCESS'];

/** Inside a staging directory, never published: who writes it, and the caller's resume journal. */
const OWNER = '.sluice-owner';
const JOURNAL = '.sluice-journal';

function fileTransaction(target: string, staging: string, url: string, options: BeginOptions, journal: Uint8Array | undefined): Transaction {
  const inFlight = new Set<Promise<unknown>>();
  let journalSaved = journal !== undefined;
  const abort = async (): Promise<void> => {
    await Promise.allSettled([...inFlight]);
    await rm(staging, { recursive: true, force: true }).catch(() => undefined);
  };
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
    // Durable before it can be committed: a crash after the swap must not leave empty files.
    return { bytes: await writeDurably(path, body, opts.signal) };
  }

  return {
    write: (name, body, opts) => track(writeStream(name, body, opts)),
    journal,

    async retain(streams: readonly StagedStream[]) {
      const kept: string[] = [];
      for (const { name, bytes } of streams) {
        const size = await stat(inside(staging, name)).then((s) => s.size, () => undefined);
        // Files are synced before the journal names them, so a size that matches means complete.
        if (size === bytes) kept.push(name);
      }
      const keep = new Set([...kept, OWNER, JOURNAL]);
      const entries = await readdir(staging, { recursive: true, withFileTypes: true });
      for (const entry of entries) {
        if (!entry.isFile()) continue;
        const name = relative(staging, join(entry.parentPath, entry.name)).split(sep).join('/');
        if (!keep.has(name)) await rm(join(entry.parentPath, entry.name), { force: true });
      }
      return kept;
    },

    async saveJournal(body: Uint8Array) {
      journalSaved = true;
      // Temp file, sync, rename: a kill leaves the previous journal or this one, never half.
      const tmp = join(staging, `${JOURNAL}.tmp`);
      const handle = await open(tmp, 'w');
      try {
        await handle.writeFile(body);
        await handle.datasync();
      } finally {
        await handle.close();
      }
      await rename(tmp, join(staging, JOURNAL));
    },

    async commit(markers: readonly Marker[]) {
      await Promise.allSettled([...inFlight]);
      try {
        for (const marker of markers) {
          await writeStream(marker.name, [marker.body]);
        }
        await rm(join(staging, OWNER), { force: true });
        await rm(join(staging, JOURNAL), { force: true });
      } catch (error) {
        throw new DestinationError(url, 'writing markers to', error);
      }
      const old = `${staging}.old`;
      const conditional = markers.find((m) => m.condition !== undefined);
      const conflict = async (detail: string): Promise<never> => {
        await rm(staging, { recursive: true, force: true });
        throw new PreconditionFailedError(url, conditional!.name, detail);
      };
      const existing = await entriesOf(target);
      if (existing === undefined && conditional?.condition !== undefined && 'ifVersion' in conditional.condition) {
        await conflict('the committed output it replaces is gone (another writer committed first)');
      }
      if (existing !== undefined && conditional?.condition !== undefined && !(await holds(join(target, ...conditional.name.split('/')), conditional.condition))) {
        await conflict(`${conditional.name} changed since it was read (another writer committed first)`);
      }
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
        try {
          await rename(target, old);
        } catch (error) {
          // Gone since it was listed: another writer is swapping its commit in right now.
          if (conditional !== undefined && isCode(error, 'ENOENT')) await conflict('another writer committed first');
          throw new DestinationError(url, 'replacing', error);
        }
        // What was moved aside is exactly what the condition is checked against: a writer that
        // committed since it was read is put back and wins; this commit publishes nothing.
        if (conditional?.condition !== undefined && !(await holds(join(old, ...conditional.name.split('/')), conditional.condition))) {
          await rename(old, target).catch(() => rm(old, { recursive: true, force: true }));
          await conflict(`${conditional.name} changed since it was read (another writer committed first)`);
        }
      }
      try {
        await rename(staging, target);
      } catch (error) {
        // Renaming a directory onto a non-empty one fails: another writer published in between.
        const raced = conditional !== undefined && (isCode(error, 'ENOTEMPTY') || isCode(error, 'EEXIST'));
        if (existing !== undefined) await rename(old, target).catch(() => rm(old, { recursive: true, force: true }));
        if (raced) await conflict('another writer committed first');
        throw new DestinationError(url, 'publishing', error);
      }
      if (existing !== undefined) await rm(old, { recursive: true, force: true });
    },

    abort,

    async carry(names: readonly string[]) {
      // A hard link: the committed file itself, no copy (a copy where links are refused).
      for (const name of names) {
        const to = inside(staging, name);
        try {
          await mkdir(dirname(to), { recursive: true });
          await link(inside(target, name), to).catch((error: unknown) => {
            if (isCode(error, 'EEXIST')) return;
            if (isCode(error, 'EXDEV') || isCode(error, 'EPERM') || isCode(error, 'ENOTSUP')) return copyFile(inside(target, name), to);
            throw error;
          });
        } catch (error) {
          throw new DestinationError(url, `keeping the committed ${name} in`, error);
        }
      }
    },

    async suspend() {
      if (!journalSaved) return abort();
      // The staging area stays as a kill leaves it; `retain` of the next attempt drops what the
      // journal does not list (a file cut short here included).
      await Promise.allSettled([...inFlight]);
    },
  };
}

/** A file's version for conditional publishing: a hash of its content. */
function versionOf(body: Uint8Array): string {
  return createHash('sha256').update(body).digest('hex');
}

/** Whether the file at `path` satisfies `condition` now. */
async function holds(path: string, condition: PublishCondition): Promise<boolean> {
  const body = await readFile(path).then((b) => new Uint8Array(b), (error: unknown) => {
    if (isCode(error, 'ENOENT') || isCode(error, 'ENOTDIR')) return undefined;
    throw error;
  });
  return 'ifAbsent' in condition ? body === undefined : body !== undefined && versionOf(body) === condition.ifVersion;
}

/** Infix of the temp and lock files of `publishFile`, never listed as content. */
const PUBLISHING = '.sluice-publish-';
const LOCK_WAIT_MS = 10_000;

/**
 * A conditional publish of one file. Create-only: the body goes to a synced temp file that is then
 * hard-linked to the name, which fails when the name exists. Replace-if-unchanged: under a lock file
 * (an exclusive create beside it; a lock whose process is gone is taken over), the current content
 * is compared with the version read and the temp file renamed over it.
 */
export async function publishFile(url: string, path: string, name: string, body: Uint8Array, condition: PublishCondition): Promise<string> {
  const tmp = `${dirname(path)}${sep}${PUBLISHING}${randomBytes(6).toString('hex')}.tmp`;
  try {
    await mkdir(dirname(path), { recursive: true });
    const handle = await open(tmp, 'wx');
    try {
      await handle.writeFile(body);
      await handle.datasync();
    } finally {
      await handle.close();
    }
  } catch (error) {
    await rm(tmp, { force: true });
    throw new DestinationError(url, `writing ${name} to`, error);
  }
  try {
    if ('ifAbsent' in condition) {
      try {
        await link(tmp, path);
      } catch (error) {
        if (isCode(error, 'EEXIST')) throw new PreconditionFailedError(url, name, `${name} exists already (another writer published it first)`);
        throw error;
      }
    } else {
      const unlock = await lockFile(`${dirname(path)}${sep}${PUBLISHING}${basename(path)}.lock`);
      try {
        if (!(await holds(path, condition))) throw new PreconditionFailedError(url, name, `${name} changed since it was read (another writer published first)`);
        await rename(tmp, path);
      } finally {
        await unlock();
      }
    }
    return versionOf(body);
  } catch (error) {
    if (error instanceof PreconditionFailedError) throw error;
    throw new DestinationError(url, `publishing ${name} to`, error);
  } finally {
    await rm(tmp, { force: true });
  }
}

/**
 * Writes a stream in place: into a temp file beside the name (never listed), synced, then renamed
 * over it, so the name shows complete bytes or nothing.
 */
async function putFile(url: string, path: string, name: string, body: AsyncIterable<Uint8Array>, signal: AbortSignal | undefined): Promise<{ bytes: number }> {
  const tmp = `${dirname(path)}${sep}${PUBLISHING}${randomBytes(6).toString('hex')}.tmp`;
  try {
    await mkdir(dirname(path), { recursive: true });
    const bytes = await writeDurably(tmp, body, signal);
    await rename(tmp, path);
    return { bytes };
  } catch (error) {
    await rm(tmp, { force: true });
    if (signal?.aborted) throw signal.reason;
    throw error instanceof DestinationError ? error : new DestinationError(url, `writing ${name} to`, error);
  }
}

/** Writes `body` into a new file at `path` (never an existing one) and syncs it to disk: the bytes written. */
export async function writeDurably(path: string, body: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, signal: AbortSignal | undefined): Promise<number> {
  const handle = await open(path, 'wx');
  let bytes = 0;
  try {
    for await (const chunk of body) {
      signal?.throwIfAborted();
      let done = 0;
      while (done < chunk.byteLength) done += (await handle.write(chunk, done)).bytesWritten;
      bytes += chunk.byteLength;
    }
    await handle.datasync();
  } finally {
    await handle.close();
  }
  return bytes;
}

async function lockFile(path: string): Promise<() => Promise<void>> {
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

/**
 * A commit killed between its two renames leaves the output missing and the last committed
 * output aside as `<staging>.old`: put it back, so readers and the next run see it again.
 */
async function restoreAside(parent: string, prefix: string, target: string): Promise<void> {
  if ((await entriesOf(target)) !== undefined) return;
  const names = (await entriesOf(parent)) ?? [];
  for (const name of names.filter((n) => n.startsWith(prefix) && n.endsWith('.old'))) {
    const owner = name.slice(0, -'.old'.length);
    // Only a running writer's folder holds it back: a commit killed between its renames leaves a
    // folder with no owner file, whose output must come back now, not after a grace.
    if (names.includes(owner) && (await ownerRuns(join(parent, owner, OWNER)))) continue;
    await rename(join(parent, name), target).catch(() => undefined);
    return;
  }
}

/**
 * Removes staging directories of other attempts of this output whose writer is gone (a killed
 * run), and `.old` directories (the previous output, which a commit killed before its cleanup
 * left aside; `restoreAside` already put one back if the output was missing).
 */
async function removeStale(parent: string, prefix: string, attemptId: string | undefined, target: string): Promise<void> {
  const names = (await entriesOf(parent)) ?? [];
  for (const name of names.filter((n) => n.startsWith(prefix))) {
    const path = join(parent, name);
    if (name.endsWith('.old')) {
      const owner = name.slice(0, -'.old'.length);
      if (names.includes(owner) && (await ownerAlive(join(parent, owner)))) continue;
      await rm(path, { recursive: true, force: true });
      continue;
    }
    if ((attemptId !== undefined && name === `${prefix}${attemptId}`) || (await ownerAlive(path))) continue;
    await rm(path, { recursive: true, force: true });
  }
}

/**
 * Whether another writer may still be using a staging directory: its owner file names a process
 * that runs, or it has no owner file and changed within `OWNERLESS_GRACE_MS`. A writer creates the
 * directory and then writes the file, and removes the file just before its commit renames the
 * directory: in both moments the directory is in use with no owner file (and its modification
 * time is that moment), and another writer's sweep must not remove it.
 */
async function ownerAlive(staging: string): Promise<boolean> {
  // One read: the file is written whole (renamed into place), so it is there or not.
  const text = await readFile(join(staging, OWNER), 'utf8').catch((error: unknown) => (isCode(error, 'ENOENT') ? undefined : ''));
  if (text !== undefined) return textOwnerRuns(text);
  const changed = await stat(staging).then((s) => s.mtimeMs, () => undefined);
  return changed !== undefined && Date.now() - changed < OWNERLESS_GRACE_MS;
}

/**
 * How long a staging directory with no owner file is taken to be in use (see `ownerAlive`): the
 * moments it covers last milliseconds; a minute covers them on a loaded machine too, and is how
 * long a folder a kill left in such a moment outlives the next run.
 */
const OWNERLESS_GRACE_MS = 60_000;

/** Whether the process a file names (`host pid`) still runs. */
async function ownerRuns(file: string): Promise<boolean> {
  return textOwnerRuns(await readFile(file, 'utf8').catch(() => ''));
}

/** Whether the process `host pid` names still runs (another host's: not known, taken as gone). */
function textOwnerRuns(text: string): boolean {
  const [host, pidText] = text.trim().split(' ');
  const pid = Number(pidText);
  if (host !== hostname() || !Number.isInteger(pid) || pid <= 0) return false;
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return isCode(error, 'EPERM');
  }
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
export function inside(root: string, name: string): string {
  const path = resolve(root, ...name.split('/'));
  if (isAbsolute(name) || !path.startsWith(root + sep)) throw new Error(`name ${JSON.stringify(name)} escapes ${root}`);
  return path;
}

export function isCode(error: unknown, code: string): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === code;
}

/**
 * Before anything is spent: the output folder is a folder, holds nothing sluice did not write (a
 * committed export has its markers), and it or its nearest existing parent can be written.
 */
async function checkWritable(target: string, url: string, records: readonly string[]): Promise<void> {
  const found = await stat(target).catch(() => undefined);
  if (found !== undefined && !found.isDirectory()) throw new DestinationCheckError(url, `${target} is a file, not a folder; point the export at a folder`);
  if (found !== undefined) {
    const entries = (await entriesOf(target)) ?? [];
    const marked = records.some((r) => entries.includes(r.split('/')[0]!));
    if (entries.length > 0 && !marked) {
      throw new DestinationCheckError(url, `the folder holds files sluice did not write (${entries.slice(0, 5).join(', ')}${entries.length > 5 ? ', ...' : ''}); point the export at an empty or sluice-owned folder`);
    }
  }
  let existing = found === undefined ? dirname(target) : target;
  for (;;) {
    const here = await stat(existing).catch(() => undefined);
    if (here?.isDirectory()) break;
    if (here !== undefined) throw new DestinationCheckError(url, `${existing} is a file, so no folder can be made under it`);
    const up = dirname(existing);
    if (up === existing) break;
    existing = up;
  }
  try {
    await access(existing, constants.W_OK);
  } catch (error) {
    throw new DestinationCheckError(url, `cannot write in ${existing} (${(error as NodeJS.ErrnoException).code ?? 'EACCES'})`, error);
  }
}
