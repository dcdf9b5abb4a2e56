import { DestinationError, type ObjectStore } from '../../kit/index.ts';
import type { BeginOptions } from '../destination.ts';
import type { Lease } from './leases.ts';
import { dataStore, journalName, type Place } from './place.ts';

/** A transaction that publishes what other writers stored (the parts of a sharded export). */
export interface Adopted {
  /** Names written by the shards: published by the commit, never removed by an abort. */
  readonly files: readonly string[];
  /** On a linked store: the shared folder the shards wrote into, which the commit publishes. */
  readonly folder?: string;
}

/** What the resume journal held: the caller's journal and, for a table writer, its token. */
export interface SavedJournal {
  readonly journal: Uint8Array | undefined;
  readonly token: string;
}

/**
 * What one transaction's steps share: where it writes, what it wrote, kept and carried, the writes
 * in flight, and how far it got towards publishing (which decides what an abort may remove).
 */
export class TransactionState {
  readonly url: string;
  /** Where data goes: the output itself (in place) or this transaction's folder of the area (linked). */
  readonly target: ObjectStore;
  readonly inPlace: boolean;
  /** Names the committed output lists. */
  readonly previous: Set<string>;
  /** Names other writers stored that this transaction publishes (see `Adopted`). */
  readonly theirs: Set<string>;
  /** Stored names this transaction wrote, recorded before each write starts. */
  readonly written = new Set<string>();
  /** Stored names of a killed attempt this transaction kept. */
  readonly retained = new Set<string>();
  /** Committed names kept in this commit (an append). */
  readonly carried = new Set<string>();
  readonly journalKey: string;
  journalSaved: boolean;
  /** Set once the commit point passed: nothing written goes any more. */
  published = false;
  /** Set when a table's commit may have landed without this writer knowing: abort then leaves everything. */
  outcomeUnknown = false;
  private readonly inFlight = new Map<Promise<unknown>, AbortController>();
  /** In place: set once the committed output's markers are gone; its objects are then no longer protected. */
  private withdrawal: Promise<void> | undefined;

  readonly place: Place;
  readonly options: BeginOptions;
  readonly lease: Lease;
  readonly saved: SavedJournal;
  /** The commit folder's id (linked) or the attempt's (in place). */
  readonly folder: string;
  readonly adopted: Adopted | undefined;

  constructor(place: Place, options: BeginOptions, lease: Lease, saved: SavedJournal, folder: string, adopted: Adopted | undefined) {
    this.place = place;
    this.options = options;
    this.lease = lease;
    this.saved = saved;
    this.folder = folder;
    this.adopted = adopted;
    this.url = place.url;
    this.target = dataStore(place, folder);
    this.inPlace = place.link === undefined;
    this.previous = new Set(options.previous);
    this.theirs = new Set(adopted?.files ?? []);
    this.journalKey = journalName(options.attemptId);
    this.journalSaved = saved.journal !== undefined;
  }

  /** Where a stream is stored: its own name, or a table layout's name for it. */
  readonly located = (name: string): string => (this.place.layout === undefined ? name : this.place.layout.located(name, this.saved.token));

  /** Whether the committed output's markers were withdrawn (its objects may then be overwritten or removed). */
  get withdrawn(): boolean {
    return this.withdrawal !== undefined;
  }

  /** Removes the committed output's markers, once, before an object it lists is overwritten. */
  withdraw(): Promise<void> {
    return (this.withdrawal ??= this.place.store.delete((this.options.markers ?? []).filter((m) => this.previous.has(m))));
  }

  /** Fails as the transaction's start when the writer's lease could not be stored. */
  leaseTaken(): Promise<void> {
    return this.lease.taken.catch((error: unknown) => {
      throw new DestinationError(this.url, 'starting a transaction at', error, true);
    });
  }

  /** Runs one store write, tracked so `settle` can stop it. */
  async track<T>(controller: AbortController, work: Promise<T>): Promise<T> {
    this.inFlight.set(work, controller);
    try {
      return await work;
    } finally {
      this.inFlight.delete(work);
    }
  }

  /** Waits for every write in flight; with a reason, stops them first. */
  async settle(why: string | undefined): Promise<void> {
    if (why !== undefined) for (const controller of this.inFlight.values()) controller.abort(new Error(why));
    await Promise.allSettled([...this.inFlight.keys()]);
  }
}
