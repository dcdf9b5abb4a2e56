import { randomBytes } from 'node:crypto';
import { ANY_TARGET, DestinationError, PreconditionFailedError, type ObjectStore, type PutCondition } from '../../kit/index.ts';
import type { BeginOptions, Marker, StagedStream, Transaction, WriteOptions } from '../destination.ts';
import { type Lease, mustHold, takeLease } from './leases.ts';
import { dataStore, folderId, folderOf, journalName, type Place, replacedId, replacedName } from './place.ts';
import { sweep, UNKNOWN } from './sweep.ts';

/** A transaction that publishes what other writers stored (the parts of a sharded export). */
export interface Adopted {
  /** Names written by the shards: published by the commit, never removed by an abort. */
  readonly files: readonly string[];
  /** On a linked store: the shared folder the shards wrote into, which the commit publishes. */
  readonly folder?: string;
}

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
  return storeTransaction(place, options, lease, saved, folder, adopted);
}

/** A table writer's journal: its token (the names of its parts) and the caller's journal. Unreadable: start afresh. */
function tableJournal(bytes: Uint8Array | undefined): { journal: Uint8Array | undefined; token: string } {
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

function storeTransaction(place: Place, options: BeginOptions, lease: Lease, saved: { journal: Uint8Array | undefined; token: string }, folder: string, adopted: Adopted | undefined): Transaction {
  const { url, layout } = place;
  const { journal, token } = saved;
  // Where a stream is stored: its own name, or a table layout's name for it.
  const at = (name: string): string => (layout === undefined ? name : layout.located(name, token));
  // Set when a table's commit may have landed without this writer knowing: abort then leaves everything.
  let outcomeUnknown = false;
  let published = false;
  const target = dataStore(place, folder);
  const inPlace = place.link === undefined;
  const previous = new Set(options.previous);
  const theirs = new Set(adopted?.files ?? []);
  const written = new Set<string>();
  const retained = new Set<string>();
  const carried = new Set<string>();
  const journalKey = journalName(options.attemptId);
  let journalSaved = journal !== undefined;
  const inFlight = new Map<Promise<unknown>, AbortController>();
  const settle = async (why: string | undefined): Promise<void> => {
    if (why !== undefined) for (const controller of inFlight.values()) controller.abort(new Error(why));
    await Promise.allSettled([...inFlight.keys()]);
  };
  // In place: set once the committed output's markers are gone; its objects are then no longer protected.
  let withdrawal: Promise<void> | undefined;
  const withdraw = (): Promise<void> => (withdrawal ??= place.store.delete((options.markers ?? []).filter((m) => previous.has(m))));

  const leaseTaken = (): Promise<void> =>
    lease.taken.catch((error: unknown) => {
      throw new DestinationError(url, 'starting a transaction at', error, true);
    });

  const abort = async (_reason?: unknown, keep: readonly string[] = []): Promise<void> => {
    await settle('transaction aborted');
    try {
      // Published (a failure after the commit point, its sweep's), or maybe published: nothing of it goes.
      if (published || outcomeUnknown) return;
      if (!inPlace) {
        if (adopted?.folder === undefined) await removeFolder(place, folder);
      } else {
        const protect = new Set(keep);
        const ours = [...written, ...retained].filter((n) => (withdrawal !== undefined || !previous.has(n)) && !protect.has(n) && !theirs.has(n));
        await place.store.delete(ours);
      }
      if (journalSaved) await place.area.delete([journalKey]);
    } catch {
      // Never throws: what is left has no live lease once it is released, and the next sweep takes it.
    } finally {
      await lease.release(true).catch(() => undefined);
    }
  };

  async function write(name: string, body: AsyncIterable<Uint8Array>, opts: WriteOptions = {}) {
    const controller = new AbortController();
    const signal = opts.signal ? AbortSignal.any([opts.signal, controller.signal]) : controller.signal;
    if (inPlace && previous.has(name)) {
      try {
        await withdraw();
      } catch (error) {
        throw new DestinationError(url, `withdrawing the committed output before overwriting ${name} at`, error, true);
      }
    }
    // Recorded before the write starts: one that completes after abort began is still cleaned up.
    const stored = at(name);
    written.add(stored);
    // The body's own failure (the rows, a part thread) passes unchanged; only the store's is wrapped.
    let failed: { error: unknown } | undefined;
    const source = (async function* () {
      try {
        yield* body;
        // The object becomes visible only once its body ends: never before the writer's lease.
        await leaseTaken();
      } catch (error) {
        failed = { error };
        throw error;
      }
    })();
    const done = target.put(stored, source, { contentType: opts.contentType, signal });
    inFlight.set(done, controller);
    try {
      return { bytes: (await done).bytes };
    } catch (error) {
      if (failed !== undefined) throw failed.error;
      if (signal.aborted) throw signal.reason;
      throw error instanceof DestinationError ? error : new DestinationError(url, `writing ${name} to`, error, true);
    } finally {
      inFlight.delete(done);
    }
  }

  /** A table format's own commit point (see `Transaction.commit`). */
  async function publishStep(publish: () => Promise<boolean>): Promise<boolean> {
    try {
      return (published = await publish());
    } catch (error) {
      outcomeUnknown = (error as { unknownOutcome?: unknown } | null)?.unknownOutcome === true;
      throw error;
    }
  }

  /** Puts the markers in order; resolves to the version the first one (the commit point) got. */
  async function publishMarkers(markers: readonly Marker[]): Promise<string | undefined> {
    let first: string | undefined;
    for (const marker of markers) {
      // Markers this transaction withdrew are gone: replacing one then means creating it.
      const condition: PutCondition | undefined = marker.condition !== undefined && withdrawal !== undefined && previous.has(marker.name) ? { ifAbsent: true } : marker.condition;
      const version = await putMarker(place.store, url, marker, condition);
      first ??= version;
      published = true;
    }
    return first;
  }

  /** Swaps the link to this transaction's folder: resolves to the id of the commit folder it replaced. */
  async function swapIn(markers: readonly Marker[]): Promise<string | undefined> {
    const link = place.link!;
    const expected = await link.target(options.signal);
    // When the replaced folder stopped being the output, for its readers (see `sweep`): recorded
    // before the swap, so no sweep finds it replaced without the record. A swap that then fails
    // leaves a record of the output, which a sweep does not touch and the next swap writes anew.
    const replaced = expected === undefined ? undefined : folderId(expected);
    const record = replaced === undefined ? undefined : place.area.put(replacedName(replaced), new Uint8Array(), { durable: false }).catch(() => undefined);
    for (const marker of markers) {
      // A shared folder may hold another committer's markers of the same export already.
      await putMarker(target, url, marker, adopted?.folder ? { ifAbsent: true } : undefined).catch((error: unknown) => {
        if (!(error instanceof PreconditionFailedError) || adopted?.folder === undefined) throw error;
      });
    }
    await record;
    const conditional = markers.find((m) => m.condition !== undefined);
    if (conditional !== undefined && !(await holds(conditional, expected))) {
      throw new PreconditionFailedError(url, conditional.name, `${conditional.name} changed since it was read (another writer committed first)`);
    }
    if (expected !== undefined && !expected.startsWith('v/')) await refuseForeign();
    // The folder is never rewritten once swapped in: a target unchanged since `holds` is the version read.
    await link.swap(folderOf(folder), conditional === undefined ? ANY_TARGET : expected);
    published = true;
    return replaced;
  }

  /** Whether `marker`'s condition holds for the output `current` (a commit folder, or an older layout's folder). */
  async function holds(marker: Marker, current: string | undefined): Promise<boolean> {
    const condition = marker.condition!;
    const found = current === undefined ? undefined : current.startsWith('v/') ? await place.area.head(`${current}${marker.name}`) : await place.store.head(marker.name);
    return 'ifAbsent' in condition ? found === undefined : found?.version === condition.ifVersion;
  }

  /** An output folder of an older layout, taken over by this commit, must hold only what sluice wrote there. */
  async function refuseForeign(): Promise<void> {
    const ours = new Set([...options.previous, ...(options.markers ?? [])]);
    const foreign = (await place.store.list('')).filter((n) => !ours.has(n));
    if (foreign.length === 0) return;
    throw new DestinationError(
      url,
      'replacing',
      new Error(`the directory holds files this export did not write (${foreign.slice(0, 5).join(', ')}${foreign.length > 5 ? ', ...' : ''}); point the export at an empty or sluice-owned directory`),
    );
  }

  return {
    journal,
    write: (name, body, opts) => write(name, body, opts),

    async retain(streams: readonly StagedStream[]) {
      const kept: string[] = [];
      for (const { name, bytes } of streams) {
        let size: number | undefined;
        try {
          size = (await target.head(at(name), options.signal))?.size;
        } catch (error) {
          throw new DestinationError(url, `checking ${name} at`, error, true);
        }
        // An object appears only whole: the recorded size means it is the part the journal lists.
        if (size !== bytes) continue;
        kept.push(name);
        retained.add(at(name));
      }
      if (layout !== undefined) {
        // What the killed attempt wrote beyond them (its token is in the name) is referenced by nothing.
        const extra = (await target.list(layout.prefix, options.signal)).filter((n) => layout.tokenOf(n) === token && !retained.has(n));
        await target.delete(extra, options.signal);
      }
      if (!inPlace) {
        // What the killed attempt left in its folder beyond the kept parts goes now.
        const extra = (await target.list('', options.signal)).filter((n) => !retained.has(n));
        await target.delete(extra, options.signal);
      }
      return kept;
    },

    async saveJournal(body: Uint8Array) {
      await leaseTaken();
      journalSaved = true;
      try {
        await place.area.put(journalKey, layout === undefined ? body : tableRecord(token, body), { contentType: 'application/json' });
      } catch (error) {
        throw new DestinationError(url, 'saving the resume journal to', error, true);
      }
    },

    located: at,

    async commit(markers: readonly Marker[], publish?: () => Promise<boolean>) {
      await settle(undefined);
      await leaseTaken();
      await mustHold(lease, url, options.signal);
      if (publish !== undefined && !(await publishStep(publish))) return abort();
      // The version our own put got: read back later, a newer commit's would pass for ours.
      const ours = inPlace && publish === undefined ? await publishMarkers(markers) : undefined;
      const replaced = inPlace ? undefined : await swapIn(markers);
      // Released while the sweep runs, which counts this writer as itself, not as another one alive.
      const released = lease.release(true).catch(() => undefined);
      const journalGone = journalSaved ? place.area.delete([journalKey]).catch(() => undefined) : undefined;
      const keep = new Set([...written, ...retained, ...carried, ...theirs, ...markers.map((m) => m.name)]);
      let stale: string[] = [];
      try {
        if (inPlace && layout === undefined) {
          // The previous output's objects the new one does not list: no commit lists them any more.
          stale = [...previous].filter((n) => !keep.has(n));
          await place.store.delete(stale);
        }
        const first = markers[0]?.name;
        // What abandoned attempts left, while the output is still this commit (see `sweep`).
        // Replaced by another writer's commit meanwhile: its names are not known here, so nothing goes.
        const owned = async () => (!inPlace || (first !== undefined && (await place.store.head(first))?.version === ours) ? [...keep] : UNKNOWN);
        // What this commit leaves by right: in place its own objects, linked its folder and the one it replaced (kept for readers).
        const expected = inPlace ? (n: string) => keep.has(n) : (n: string) => [folder, replaced].includes(folderId(n) ?? replacedId(n));
        await sweep(place, owned, { self: lease.id, expected });
      } catch (error) {
        // The new output is committed; leftovers are unreferenced by it. Say so loudly.
        throw new DestinationError(url, `committed, but removing ${stale.length || 'the'} objects of earlier outputs from`, error, true);
      } finally {
        await released;
        await journalGone;
      }
    },

    abort,

    async carry(names: readonly string[]) {
      for (const name of names) carried.add(name);
      // In place the objects stay where they are (the commit only must not remove them); linked, they
      // become part of this commit's folder too.
      if (!inPlace) await place.link!.carry(names, folderOf(folder));
    },

    async suspend() {
      if (!journalSaved) return abort();
      // Open writes are stopped (no half objects: none appear); finished ones and the journal stay
      // for the next attempt. The lease is left to expire: the next attempt takes it over.
      await settle('transaction suspended');
      await lease.release(false);
    },
  };
}

function tableRecord(token: string, journal: Uint8Array): Uint8Array {
  return new TextEncoder().encode(`${JSON.stringify({ token, journal: Buffer.from(journal).toString('base64') })}\n`);
}

async function putMarker(store: ObjectStore, url: string, marker: Marker, condition: PutCondition | undefined): Promise<string> {
  try {
    return (await store.put(marker.name, marker.body, { contentType: marker.contentType, condition })).version;
  } catch (error) {
    if (error instanceof PreconditionFailedError) throw error;
    throw new DestinationError(url, `writing ${marker.name} to`, error, true);
  }
}

/** Removes one commit folder of a linked store's area. */
export async function removeFolder(place: Place, folder: string, signal?: AbortSignal): Promise<void> {
  // Only a linked store (a file system) has folders: the folder's own name goes too, so a commit
  // that failed before any file of it was published leaves no empty folder, which no listing sees.
  await place.area.delete([...(await place.area.list(folderOf(folder), signal)), folderOf(folder)], signal);
}
