import type { JsonStore } from '../store.ts';
import { ViewRecordSchema, type ViewRecord } from './viewRecord.ts';

export const LIST_LIMIT_MAX = 10_000;

export interface ListPage {
  views: ViewRecord[];
  nextOffset?: number;
}

/**
 * The materialized views of every team, keyed by team and name; persisted one file per view id.
 * Writes go to memory at once (so lookups that follow see them) and to disk before they resolve.
 */
export class ViewRegistry {
  readonly #byKey = new Map<string, ViewRecord>();
  readonly #store: JsonStore<ViewRecord> | undefined;

  constructor(store?: JsonStore<ViewRecord>) {
    this.#store = store;
  }

  async load(): Promise<void> {
    if (this.#store === undefined) return;
    const loaded = await this.#store.loadAll((raw) => ViewRecordSchema.parse(raw));
    for (const rec of loaded.values()) this.#byKey.set(key(rec.team, rec.name), rec);
  }

  get(team: string, name: string): ViewRecord | undefined {
    return this.#byKey.get(key(team, name));
  }

  byId(id: string): ViewRecord | undefined {
    for (const rec of this.#byKey.values()) if (rec.id === id) return rec;
    return undefined;
  }

  /** The team's view of a query (a query has at most one view per team). */
  ofQuery(team: string, queryId: number): ViewRecord | undefined {
    for (const rec of this.#byKey.values()) if (rec.team === team && rec.queryId === queryId) return rec;
    return undefined;
  }

  /** The view a refresh execution belongs to. */
  ofExecution(executionId: string): ViewRecord | undefined {
    for (const rec of this.#byKey.values()) if (rec.lastExecutionIds.includes(executionId)) return rec;
    return undefined;
  }

  all(): ViewRecord[] {
    return [...this.#byKey.values()];
  }

  /** The team's views, oldest first, one page of them. */
  list(team: string, limit: number, offset: number): ListPage {
    const mine = this.all()
      .filter((v) => v.team === team)
      .sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1));
    const views = mine.slice(offset, offset + limit);
    const next = offset + views.length;
    return next < mine.length && views.length > 0 ? { views, nextOffset: next } : { views };
  }

  /** Bytes held by the team's views, leaving one out (the one being refreshed). */
  storageBytes(team: string, except?: string): number {
    let sum = 0;
    for (const v of this.#byKey.values()) if (v.team === team && v.name !== except) sum += v.tableSizeBytes;
    return sum;
  }

  /** Stores the record, replacing the one of the same id (it may have been renamed). */
  async put(rec: ViewRecord): Promise<void> {
    for (const [k, v] of this.#byKey) if (v.id === rec.id && k !== key(rec.team, rec.name)) this.#byKey.delete(k);
    this.#byKey.set(key(rec.team, rec.name), rec);
    await this.#store?.put(rec.id, rec);
  }

  async delete(rec: ViewRecord): Promise<void> {
    this.#byKey.delete(key(rec.team, rec.name));
    await this.#store?.remove(rec.id);
  }
}

function key(team: string, name: string): string {
  return `${team}.${name}`;
}
