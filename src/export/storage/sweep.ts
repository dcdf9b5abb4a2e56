import { journalAttempt, folderId, folderOf, type Place, PART, JOURNAL_PREFIX } from './place.ts';
import { leasesOf } from './leases.ts';

export interface SweepOptions {
  /** The sweeping writer's own lease, never counted as another live writer. */
  readonly self?: string | undefined;
  /** On a linked store: a commit folder left alone this time (the one a commit just replaced, which readers may still be listing). */
  readonly spare?: string | undefined;
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
 * each commit is a folder of its own, removed when it is not the output and its writer is dead.
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
    stale = names.filter((n) => {
      const id = folderId(n);
      return id !== undefined && folderOf(id) !== after.key && folderOf(id) !== options.spare && !alive(id);
    });
  } else {
    const keep = new Set(after.names);
    const othersAlive = [...live].some((id) => id !== self);
    stale = othersAlive ? [] : names.filter((n) => PART.test(n) && !keep.has(n));
  }
  await place.area.delete([...stale, ...deadJournals], signal);
  await place.area.delete(dead, signal);
}
