import { ANY_TARGET, DestinationError, PreconditionFailedError, type ObjectStore, type PutCondition } from '../../kit/index.ts';
import type { Marker } from '../destination.ts';
import { mustHold } from './leases.ts';
import { folderId, folderOf, replacedId, replacedName } from './place.ts';
import { sweep, UNKNOWN } from './sweep.ts';
import type { TransactionState } from './transactionState.ts';

/** Where the commit point left the output: what the commit then cleans up after. */
export interface Published {
  /** In place: the version the first marker got (read back later, a newer commit's would pass for ours). */
  readonly ours: string | undefined;
  /** Linked: the id of the commit folder the swap replaced. */
  readonly replaced: string | undefined;
}

/**
 * Passes the commit point: a table format's own publish, the markers put in place, or the link
 * swapped. Resolves to undefined when a table's publish published nothing (the caller aborts).
 */
export async function passCommitPoint(s: TransactionState, markers: readonly Marker[], publish?: () => Promise<boolean>): Promise<Published | undefined> {
  await s.settle(undefined);
  await s.leaseTaken();
  await mustHold(s.lease, s.url, s.options.signal);
  if (publish !== undefined && !(await publishStep(s, publish))) return undefined;
  const ours = s.inPlace && publish === undefined ? await publishMarkers(s, markers) : undefined;
  const replaced = s.inPlace ? undefined : await swapIn(s, markers);
  return { ours, replaced };
}

/** A table format's own commit point (see `Transaction.commit`). */
async function publishStep(s: TransactionState, publish: () => Promise<boolean>): Promise<boolean> {
  try {
    return (s.published = await publish());
  } catch (error) {
    s.outcomeUnknown = (error as { unknownOutcome?: unknown } | null)?.unknownOutcome === true;
    throw error;
  }
}

/** Puts the markers in order; resolves to the version the first one (the commit point) got. */
async function publishMarkers(s: TransactionState, markers: readonly Marker[]): Promise<string | undefined> {
  let first: string | undefined;
  for (const marker of markers) {
    // Markers this transaction withdrew are gone: replacing one then means creating it.
    const condition: PutCondition | undefined = marker.condition !== undefined && s.withdrawn && s.previous.has(marker.name) ? { ifAbsent: true } : marker.condition;
    const version = await putMarker(s.place.store, s.url, marker, condition);
    first ??= version;
    s.published = true;
  }
  return first;
}

/** Swaps the link to this transaction's folder: resolves to the id of the commit folder it replaced. */
async function swapIn(s: TransactionState, markers: readonly Marker[]): Promise<string | undefined> {
  const { place, url } = s;
  const link = place.link!;
  const expected = await link.target(s.options.signal);
  // When the replaced folder stopped being the output, for its readers (see `sweep`): recorded
  // before the swap, so no sweep finds it replaced without the record. A swap that then fails
  // leaves a record of the output, which a sweep does not touch and the next swap writes anew.
  const replaced = expected === undefined ? undefined : folderId(expected);
  const record = replaced === undefined ? undefined : place.area.put(replacedName(replaced), new Uint8Array(), { durable: false }).catch(() => undefined);
  await putFolderMarkers(s, markers);
  await record;
  const conditional = markers.find((m) => m.condition !== undefined);
  if (conditional !== undefined && !(await holds(s, conditional, expected))) {
    throw new PreconditionFailedError(url, conditional.name, `${conditional.name} changed since it was read (another writer committed first)`);
  }
  if (expected !== undefined && !expected.startsWith('v/')) await refuseForeign(s);
  // The folder is never rewritten once swapped in: a target unchanged since `holds` is the version read.
  await link.swap(folderOf(s.folder), conditional === undefined ? ANY_TARGET : expected);
  s.published = true;
  return replaced;
}

/** Puts the markers into this transaction's folder, before it is swapped in. */
async function putFolderMarkers(s: TransactionState, markers: readonly Marker[]): Promise<void> {
  const shared = s.adopted?.folder !== undefined;
  for (const marker of markers) {
    // A shared folder may hold another committer's markers of the same export already.
    await putMarker(s.target, s.url, marker, shared ? { ifAbsent: true } : undefined).catch((error: unknown) => {
      if (!(error instanceof PreconditionFailedError) || !shared) throw error;
    });
  }
}

/** Whether `marker`'s condition holds for the output `current` (a commit folder, or an older layout's folder). */
async function holds(s: TransactionState, marker: Marker, current: string | undefined): Promise<boolean> {
  const condition = marker.condition!;
  const found = current === undefined ? undefined : current.startsWith('v/') ? await s.place.area.head(`${current}${marker.name}`) : await s.place.store.head(marker.name);
  return 'ifAbsent' in condition ? found === undefined : found?.version === condition.ifVersion;
}

/** An output folder of an older layout, taken over by this commit, must hold only what sluice wrote there. */
async function refuseForeign(s: TransactionState): Promise<void> {
  const ours = new Set([...s.options.previous, ...(s.options.markers ?? [])]);
  const foreign = (await s.place.store.list('')).filter((n) => !ours.has(n));
  if (foreign.length === 0) return;
  throw new DestinationError(
    s.url,
    'replacing',
    new Error(`the directory holds files this export did not write (${foreign.slice(0, 5).join(', ')}${foreign.length > 5 ? ', ...' : ''}); point the export at an empty or sluice-owned directory`),
  );
}

async function putMarker(store: ObjectStore, url: string, marker: Marker, condition: PutCondition | undefined): Promise<string> {
  try {
    return (await store.put(marker.name, marker.body, { contentType: marker.contentType, condition })).version;
  } catch (error) {
    if (error instanceof PreconditionFailedError) throw error;
    throw new DestinationError(url, `writing ${marker.name} to`, error, true);
  }
}

/**
 * After the commit point: the lease and the journal go, and so do the previous output's objects the
 * new one does not list and what abandoned attempts left. A failure here throws (the output is
 * committed, but leftovers remain), never undoes the commit.
 */
export async function cleanUpAfterCommit(s: TransactionState, markers: readonly Marker[], point: Published): Promise<void> {
  const { place, inPlace } = s;
  // Released while the sweep runs, which counts this writer as itself, not as another one alive.
  const released = s.lease.release(true).catch(() => undefined);
  const journalGone = s.journalSaved ? place.area.delete([s.journalKey]).catch(() => undefined) : undefined;
  const keep = new Set([...s.written, ...s.retained, ...s.carried, ...s.theirs, ...markers.map((m) => m.name)]);
  let stale: string[] = [];
  try {
    if (inPlace && place.layout === undefined) {
      // The previous output's objects the new one does not list: no commit lists them any more.
      stale = [...s.previous].filter((n) => !keep.has(n));
      await place.store.delete(stale);
    }
    const first = markers[0]?.name;
    // What abandoned attempts left, while the output is still this commit (see `sweep`).
    // Replaced by another writer's commit meanwhile: its names are not known here, so nothing goes.
    const owned = async () => (!inPlace || (first !== undefined && (await place.store.head(first))?.version === point.ours) ? [...keep] : UNKNOWN);
    // What this commit leaves by right: in place its own objects, linked its folder and the one it replaced (kept for readers).
    const expected = inPlace ? (n: string) => keep.has(n) : (n: string) => [s.folder, point.replaced].includes(folderId(n) ?? replacedId(n));
    await sweep(place, owned, { self: s.lease.id, expected });
  } catch (error) {
    // The new output is committed; leftovers are unreferenced by it. Say so loudly.
    throw new DestinationError(s.url, `committed, but removing ${stale.length || 'the'} objects of earlier outputs from`, error, true);
  } finally {
    await released;
    await journalGone;
  }
}
