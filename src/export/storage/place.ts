import type { ObjectStore, OutputLink } from '../../kit/index.ts';
import type { TableLayout } from '../destination.ts';
import { prefixed } from './prefixed.ts';

/**
 * An output as the commit sees it: the sink's store (where readers find the output), the private
 * area for what is not output (leases, journals, the shards' records; on a linked store also the
 * commits' folders), and the link when the store has one.
 */
export interface Place {
  readonly url: string;
  readonly store: ObjectStore;
  readonly area: ObjectStore;
  readonly link: OutputLink | undefined;
  /** A table's layout: in place always (a table is never swapped whole), its records at its root. */
  readonly layout?: TableLayout | undefined;
}

export function placeOf(store: ObjectStore, layout?: TableLayout): Place {
  if (layout !== undefined) return { url: store.url, store, area: store, link: undefined, layout };
  return { url: store.url, store, area: store.link?.area ?? store, link: store.link };
}

export const JOURNAL_PREFIX = '.sluice-journal-';
export const journalName = (attemptId: string): string => `${JOURNAL_PREFIX}${attemptId}.json`;
/** The attempt a journal belongs to, or undefined for another name. */
export const journalAttempt = (name: string): string | undefined => /^\.sluice-journal-(.+)\.json$/.exec(name)?.[1];

/** On a linked store: the folder of the area one commit is written into. */
export const COMMITS = 'v/';
export const folderOf = (id: string): string => `${COMMITS}${id}/`;
/** The commit folder's id of a name in the area (`v/<id>/...`), or undefined. */
export const folderId = (name: string): string | undefined => (name.startsWith(COMMITS) ? name.slice(COMMITS.length).split('/')[0] || undefined : undefined);

/** On a linked store: when the commit folder `id` stopped being the output (a record in the area). */
export const replacedName = (id: string): string => `.sluice-replaced-${id}`;
/** The commit folder's id a replaced record names, or undefined for another name. */
export const replacedId = (name: string): string | undefined => /^\.sluice-replaced-(.+)$/.exec(name)?.[1];
/**
 * How long a commit folder that stopped being the output is kept, for readers that resolved the
 * link before it was swapped and still read its files.
 */
export const READER_GRACE_MS = 60_000;

/** Where one transaction's data goes: the output itself (in place), or its own folder of the area (linked). */
export function dataStore(place: Place, folder: string): ObjectStore {
  return place.link === undefined ? place.store : prefixed(place.area, folderOf(folder));
}

/** Part files a sluice export writes at an output written in place, maybe in Hive directories. */
export const PART = /^(?:[^/]+=[^/]*\/)*part-\d{5,}-[A-Za-z0-9._-]+\.[A-Za-z0-9]+$/;
