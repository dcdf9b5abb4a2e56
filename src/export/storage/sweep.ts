import { journalAttempt, folderId, folderOf, type Place, PART, READER_GRACE_MS, replacedId, replacedName } from './place.ts';
import { LEASE_PREFIX, leasesOf } from './leases.ts';
import type { TableLayout } from '../destination.ts';

export interface SweepOptions {
  /** The sweeping writer's own lease, never counted as another live writer. */
  readonly self?: string | undefined;
  readonly signal?: AbortSignal | undefined;
  /**
   * Names the caller knows it leaves at the output by right (a committer: what its commit lists, or
   * on a linked store the folders of its commit and of the one it replaced). When one listing shows
   * nothing else the sweep could remove, it ends there: a sweep after every commit then costs one
   * listing when nothing was left behind.
   */
  readonly expected?: ((name: string) => boolean) | undefined;
}

/**
 * What `owned` answers when the committed output is one the caller cannot read the names of (a
 * committer whose commit was replaced by another writer's meanwhile): the sweep removes nothing.
 * Not "no output": that would make every part unlisted.
 */
export const UNKNOWN: unique symbol = Symbol('another commit');

/**
 * The one sweep rule, for every store: removes what earlier attempts left at an output that the
 * committed output does not list, and nothing a writer that is still alive may yet commit.
 *
 * The objects are listed first; then `owned` (the committed output's names, undefined: none, or
 * `UNKNOWN`) is
 * read, the leases are listed, and `owned` is read again. When the two reads differ another writer
 * committed meanwhile, and this sweep removes nothing (that writer sweeps after its commit). A
 * writer's lease exists before its first object appears and goes only after its commit is
 * published, so an object listed here was written by a writer whose lease the later listing of
 * leases shows alive, or by one that is dead, or by one that committed: before the first read of
 * `owned` (which then lists the object while that commit is the output) or after it (which changes
 * `owned`).
 *
 * In place (an object store): part files no commit lists and journals of dead attempts go, parts
 * only when no other writer is alive (they cannot be told apart by writer). Linked (a file system):
 * each commit is a folder of its own, removed when it is not the output and its writer is dead,
 * and a whole commit only once its readers had time to finish (`readersDone`). The area's listing
 * names an empty folder too (`v/<id>/`), so the folder of a writer killed before its first file is
 * found and removed like any other.
 */
export async function sweep(place: Place, owned: () => Promise<readonly string[] | undefined | typeof UNKNOWN>, options: SweepOptions = {}): Promise<void> {
  if (place.layout !== undefined) return sweepTable(place, place.layout, options);
  const { signal, self, expected } = options;
  const names = await place.area.list('', signal);
  if (expected !== undefined && !names.some((n) => !expected(n) && removable(place, n, self))) return;
  const state = async (): Promise<{ key: string | undefined; names: readonly string[] } | undefined> => {
    if (place.link) return { key: await place.link.target(signal), names: [] };
    const found = await owned();
    if (found === UNKNOWN) return undefined;
    const names = found ?? [];
    return { key: [...names].sort().join('\n'), names };
  };
  const before = await state();
  if (before === undefined) return;
  const { live, dead, tags } = await leasesOf(place.area, signal);
  const after = await state();
  if (after === undefined || before.key !== after.key) return;
  const alive = (id: string): boolean => id === self || live.has(id) || [...live].some((l) => l.startsWith(`${id}~`));
  const deadJournals = names.filter((n) => {
    const attempt = journalAttempt(n);
    return attempt !== undefined && !alive(attempt);
  });
  let stale: string[];
  if (place.link) {
    const gone = await readersDone(place, names, after.key, alive, signal);
    stale = names.filter((n) => {
      const id = folderId(n) ?? replacedId(n);
      return id !== undefined && gone.has(id);
    });
    // The folders themselves too, once emptied: one a writer was killed in before its first file
    // is listed by the area as its empty folder only (a store that lists objects alone never shows it).
    stale.push(...[...gone].map(folderOf));
  } else {
    const keep = new Set(after.names);
    const othersAlive = [...live].some((id) => id !== self);
    stale = othersAlive ? [] : names.filter((n) => PART.test(n) && !keep.has(n));
  }
  await place.area.delete([...stale, ...deadJournals], signal);
  // A dead table writer's lease names its parts (its tag): only a table's sweep removes it, with them.
  await place.area.delete(dead.filter((n) => !tags.has(n)), signal);
}

/** Names of a table's own records at its root: leases and journals. */
const RECORDS = '.sluice-';

/**
 * The sweep rule at a table (see `TableLayout`), in place: the same order of reads as `sweep`
 * (objects, committed state, leases, committed state again; a commit in between makes it remove
 * nothing). A table's parts cannot be told from those of its earlier commits by name, so they are
 * taken only by the tag of a dead writer's lease, and only those the committed table does not
 * reference: a live writer's parts are never candidates, a dead one's that committed stay. A writer
 * that holds no lease (one before leases, `writeIcebergTable`) leaves what it leaves.
 */
async function sweepTable(place: Place, layout: TableLayout, options: SweepOptions): Promise<void> {
  const { signal, self } = options;
  const names = await place.area.list(RECORDS, signal);
  // One listing of the records when nothing but this writer's own is there.
  if (!names.some((n) => removable(place, n, self))) return;
  const before = await layout.committed(signal);
  const { live, dead, tags } = await leasesOf(place.area, signal);
  const after = await layout.committed(signal);
  if (before.key !== after.key) return;
  const alive = (id: string): boolean => id === self || live.has(id);
  const deadJournals = names.filter((n) => {
    const attempt = journalAttempt(n);
    return attempt !== undefined && !alive(attempt);
  });
  const tokens = new Set(tags.values());
  const parts = tokens.size === 0 ? [] : (await place.area.list(layout.prefix, signal)).filter((n) => tokens.has(layout.tokenOf(n) ?? ''));
  const referenced = parts.length === 0 ? new Set<string>() : await after.references(signal);
  if (referenced === undefined) return;
  await place.area.delete([...parts.filter((n) => !referenced.has(n)), ...deadJournals], signal);
  await place.area.delete(dead, signal);
}

/**
 * The commit folders (ids) a linked store's sweep removes: not the output, no live writer, and, for
 * a whole commit, stopped being the output more than `READER_GRACE_MS` ago (by its replaced record,
 * else by its manifest's age), so a reader that resolved the link just before a swap can finish.
 */
async function readersDone(place: Place, names: readonly string[], current: string | undefined, alive: (id: string) => boolean, signal?: AbortSignal): Promise<Set<string>> {
  const ids = new Set(names.map((n) => folderId(n) ?? replacedId(n)).filter((id): id is string => id !== undefined));
  const gone = new Set<string>();
  for (const id of ids) {
    if (folderOf(id) === current || alive(id)) continue;
    const whole = names.includes(`${folderOf(id)}_manifest.json`);
    const since = whole ? ((await place.area.head(replacedName(id), signal)) ?? (await place.area.head(`${folderOf(id)}_manifest.json`, signal)))?.modified : undefined;
    if (since === undefined || Date.now() - since > READER_GRACE_MS) gone.add(id);
  }
  return gone;
}

/** Whether a sweep might remove `name` (or, for a lease, must look at its writer): what `expected` leaves out of that decides whether to look further. */
function removable(place: Place, name: string, self: string | undefined): boolean {
  if (name.startsWith(LEASE_PREFIX) && !name.includes('/')) return name.slice(LEASE_PREFIX.length) !== self;
  const attempt = journalAttempt(name);
  if (attempt !== undefined) return attempt !== self;
  return place.link ? (folderId(name) ?? replacedId(name)) !== undefined : PART.test(name);
}
