import { randomBytes } from 'node:crypto';
import { DestinationError } from '../../kit/index.ts';
import type { BeginOptions, StagedStream, Transaction, WriteOptions, WriteResult } from '../destination.ts';
import { cleanUpAfterCommit, passCommitPoint } from './commitPoint.ts';
import { type Lease, takeLease } from './leases.ts';
import { folderOf, journalName, type Place } from './place.ts';
import { type Adopted, type SavedJournal, TransactionState } from './transactionState.ts';

/**
 * The one transaction, for every store. Data goes to its final name: in place on an object store
 * (an object appears only whole, and counts only once the manifest lists it), into a folder of its
 * own on a linked store (the output path is swapped to it at commit). The commit point is a
 * conditional put of the first marker (in place) or a conditional swap of the link.
 *
 * In place, an object the committed output lists is overwritten only after its markers are removed
 * (`withdraw`), so a failure from there on leaves no commit rather than one describing changed
 * objects.
 */
export async function beginTransaction(place: Place, options: BeginOptions, adopted?: Adopted, prepared?: Lease): Promise<Transaction> {
  const { signal, attemptId } = options;
  const folder = adopted?.folder ?? attemptId;
  const leaseId = adopted?.folder ? `${folder}~${attemptId}` : attemptId;
  // Stored while the first part is written, if not already (see `Lease.taken`); its failure fails
  // the first write. A table writer's lease carries its token, known once its journal is read.
  let lease = place.layout === undefined ? (prepared ?? takeLease(place.area, leaseId)) : prepared;
  const stop = async (error: unknown): Promise<never> => {
    await lease?.release(true).catch(() => undefined);
    throw error;
  };
  if (signal?.aborted) return stop(signal.reason);
  const journalKey = journalName(attemptId);
  let journal: Uint8Array | undefined;
  try {
    if (options.resume) journal = (await place.area.get(journalKey, signal))?.body;
    // Linked: nothing to resume means whatever a killed attempt with this id left in its folder goes
    // (a fresh attempt's id is new: it has no folder).
    if (place.link && options.resume && journal === undefined && adopted?.folder === undefined) await removeFolder(place, folder, signal);
  } catch (error) {
    return stop(signal?.aborted ? signal.reason : new DestinationError(place.url, 'reading the resume journal from', error, true));
  }
  const saved = place.layout === undefined ? { journal, token: '' } : tableJournal(journal);
  lease ??= takeLease(place.area, leaseId, saved.token);
  return storeTransaction(new TransactionState(place, options, lease, saved, folder, adopted));
}

/** A table writer's journal: its token (the names of its parts) and the caller's journal. Unreadable: start afresh. */
function tableJournal(bytes: Uint8Array | undefined): SavedJournal {
  const fresh = { journal: undefined, token: randomBytes(4).toString('hex') };
  if (bytes === undefined) return fresh;
  try {
    const parsed = JSON.parse(new TextDecoder().decode(bytes)) as { token?: unknown; journal?: unknown };
    if (typeof parsed.token !== 'string' || !/^[0-9a-f]{8}$/.test(parsed.token) || typeof parsed.journal !== 'string') return fresh;
    return { token: parsed.token, journal: new Uint8Array(Buffer.from(parsed.journal, 'base64')) };
  } catch {
    return fresh;
  }
}

/** The transaction's steps as its interface names them, over one shared state. */
function storeTransaction(s: TransactionState): Transaction {
  return {
    journal: s.saved.journal,
    write: (name, body, opts) => write(s, name, body, opts),
    retain: (streams) => retain(s, streams),
    saveJournal: (body) => saveJournal(s, body),
    located: s.located,
    async commit(markers, publish) {
      const point = await passCommitPoint(s, markers, publish);
      if (point === undefined) return abort(s);
      await cleanUpAfterCommit(s, markers, point);
    },
    abort: (_reason, keep) => abort(s, keep),
    carry: (names) => carry(s, names),
    suspend: () => suspend(s),
  };
}

/** Stores one stream at its final name (in place) or in the transaction's folder (linked). */
async function write(s: TransactionState, name: string, body: AsyncIterable<Uint8Array>, opts: WriteOptions = {}): Promise<WriteResult> {
  const controller = new AbortController();
  const signal = opts.signal ? AbortSignal.any([opts.signal, controller.signal]) : controller.signal;
  if (s.inPlace && s.previous.has(name)) {
    try {
      await s.withdraw();
    } catch (error) {
      throw new DestinationError(s.url, `withdrawing the committed output before overwriting ${name} at`, error, true);
    }
  }
  // Recorded before the write starts: one that completes after abort began is still cleaned up.
  const stored = s.located(name);
  s.written.add(stored);
  // The body's own failure (the rows, the encoder) passes unchanged; only the store's is wrapped.
  let failed: { error: unknown } | undefined;
  const source = (async function* () {
    try {
      yield* body;
      // The object becomes visible only once its body ends: never before the writer's lease.
      await s.leaseTaken();
    } catch (error) {
      failed = { error };
      throw error;
    }
  })();
  try {
    return { bytes: (await s.track(controller, s.target.put(stored, source, { contentType: opts.contentType, signal }))).bytes };
  } catch (error) {
    if (failed !== undefined) throw failed.error;
    if (signal.aborted) throw signal.reason;
    throw error instanceof DestinationError ? error : new DestinationError(s.url, `writing ${name} to`, error, true);
  }
}

/** Keeps the killed attempt's streams still stored whole; removes what else it left (see `Transaction.retain`). */
async function retain(s: TransactionState, streams: readonly StagedStream[]): Promise<string[]> {
  const { target, options, place } = s;
  const kept: string[] = [];
  for (const { name, bytes } of streams) {
    let size: number | undefined;
    try {
      size = (await target.head(s.located(name), options.signal))?.size;
    } catch (error) {
      throw new DestinationError(s.url, `checking ${name} at`, error, true);
    }
    // An object appears only whole: the recorded size means it is the part the journal lists.
    if (size !== bytes) continue;
    kept.push(name);
    s.retained.add(s.located(name));
  }
  const layout = place.layout;
  if (layout !== undefined) {
    // What the killed attempt wrote beyond them (its token is in the name) is referenced by nothing.
    const extra = (await target.list(layout.prefix, options.signal)).filter((n) => layout.tokenOf(n) === s.saved.token && !s.retained.has(n));
    await target.delete(extra, options.signal);
  }
  if (!s.inPlace) {
    // What the killed attempt left in its folder beyond the kept parts goes now.
    const extra = (await target.list('', options.signal)).filter((n) => !s.retained.has(n));
    await target.delete(extra, options.signal);
  }
  return kept;
}

async function saveJournal(s: TransactionState, body: Uint8Array): Promise<void> {
  await s.leaseTaken();
  s.journalSaved = true;
  try {
    await s.place.area.put(s.journalKey, s.place.layout === undefined ? body : tableRecord(s.saved.token, body), { contentType: 'application/json' });
  } catch (error) {
    throw new DestinationError(s.url, 'saving the resume journal to', error, true);
  }
}

/** Discards what this transaction wrote, unless it is (or may be) published. Never throws. */
async function abort(s: TransactionState, keep: readonly string[] = []): Promise<void> {
  await s.settle('transaction aborted');
  try {
    // Published (a failure after the commit point, its sweep's), or maybe published: nothing of it goes.
    if (s.published || s.outcomeUnknown) return;
    if (!s.inPlace) {
      if (s.adopted?.folder === undefined) await removeFolder(s.place, s.folder);
    } else {
      const protect = new Set(keep);
      const ours = [...s.written, ...s.retained].filter((n) => (s.withdrawn || !s.previous.has(n)) && !protect.has(n) && !s.theirs.has(n));
      await s.place.store.delete(ours);
    }
    if (s.journalSaved) await s.place.area.delete([s.journalKey]);
  } catch {
    // Never throws: what is left has no live lease once it is released, and the next sweep takes it.
  } finally {
    await s.lease.release(true).catch(() => undefined);
  }
}

async function carry(s: TransactionState, names: readonly string[]): Promise<void> {
  for (const name of names) s.carried.add(name);
  // In place the objects stay where they are (the commit only must not remove them); linked, they
  // become part of this commit's folder too.
  if (!s.inPlace) await s.place.link!.carry(names, folderOf(s.folder));
}

async function suspend(s: TransactionState): Promise<void> {
  if (!s.journalSaved) return abort(s);
  // Open writes are stopped (no half objects: none appear); finished ones and the journal stay
  // for the next attempt. The lease is left to expire: the next attempt takes it over.
  await s.settle('transaction suspended');
  await s.lease.release(false);
}

function tableRecord(token: string, journal: Uint8Array): Uint8Array {
  return new TextEncoder().encode(`${JSON.stringify({ token, journal: Buffer.from(journal).toString('base64') })}\n`);
}

/** Removes one commit folder of a linked store's area. */
export async function removeFolder(place: Place, folder: string, signal?: AbortSignal): Promise<void> {
  // Only a linked store (a file system) has folders: the folder's own name goes too, so a commit
  // that failed before any file of it was published leaves no empty folder, which no listing sees.
  await place.area.delete([...(await place.area.list(folderOf(folder), signal)), folderOf(folder)], signal);
}
