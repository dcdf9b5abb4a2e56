import { journalAttempt, folderId, folderOf, type Place, PART, READER_GRACE_MS, replacedName } from './place.ts';
import { leasesOf } from './leases.ts';

export interface SweepOptions {
  /** The sweeping writer's own lease, never counted as another live writer. */
  readonly self?: string | undefined;
  readonly signal?: AbortSignal | undefined;
}

/**
 * The one sweep rule, for every store: removes what earlier attempts left at an output that the
 * committed output does not list, and nothing a writer that is still alive may yet commit.
 *
 * `owned` reads the committed output's names (undefined: none). It is read before and after
 * everything is listed; when the two differ another writer committed meanwhile, and this sweep
 * removes nothing (that writer sweeps after its commit). A writer's lease exists before its first
 * write and goes only after its commit is published, so an object listed here was either written by
 * a writer whose lease the later listing of leases shows alive, or by one that is dead, or by one
 * that committed, which changes `owned`.
 *
 * In place (an object store): part files no commit lists and journals of dead attempts go, parts
 * only when no other writer is alive (they cannot be told apart by writer). Linked (a file system):
 * each commit is a folder of its own, removed when it is not the output and its writer is dead,
 * and a whole commit only once its readers had time to finish (`readersDone`).
 */
export async function sweep(place: Place, owned: () => Promise<readonly string[] | undefined>, options: SweepOptions = {}): Promise<void> {
  const { signal, self } = options;
  const state = async (): Promise<{ key: string | undefined; names: readonly string[] }> => {
    if (place.link) return { key: await place.link.target(signal), names: [] };
    const names = (await owned()) ?? [];
    return { key: [...names].sort().join('\n'), names };
  };
  const before = await state();
  const names = await place.area.list('', signal);
  const { live, dead } = await leasesOf(place.area, signal);
  const after = await state();
  if (before.key !== after.key) return;
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
  } else {
    const keep = new Set(after.names);
    const othersAlive = [...live].some((id) => id !== self);
    stale = othersAlive ? [] : names.filter((n) => PART.test(n) && !keep.has(n));
  }
  await place.area.delete([...stale, ...deadJournals], signal);
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

const replacedId = (name: string): string | undefined => /^\.sluice-replaced-(.+)$/.exec(name)?.[1];
