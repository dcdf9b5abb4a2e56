import { z } from 'zod';
import { parameterView, QueryParameterSchema } from '../protocol/index.ts';
import type { CreateQueryRequest, Query, UpdateQueryRequest } from '../protocol/index.ts';
import type { Clock } from './clock.ts';
import type { JsonStore } from './store.ts';
import { checkDeclarations } from './parameters.ts';

export const QueryRecordSchema = z.object({
  id: z.number().int().positive(),
  team: z.string(),
  name: z.string(),
  description: z.string(),
  tags: z.array(z.string()),
  /** Bumped when query_sql or parameters change: the latest-result lookup only sees the current version. */
  version: z.number().int().positive(),
  parameters: z.array(QueryParameterSchema),
  sql: z.string(),
  isPrivate: z.boolean(),
  isArchived: z.boolean(),
  /** Created with is_temp (records from before it read as false). */
  isTemp: z.boolean().default(false),
  createdAt: z.number(),
  updatedAt: z.number(),
});
export type QueryRecord = z.infer<typeof QueryRecordSchema>;

/** Saved queries, numbered from 1 across the whole service, persisted one file each. */
export class SavedQueries {
  readonly #records = new Map<number, QueryRecord>();
  readonly #store: JsonStore<QueryRecord>;
  readonly #clock: Clock;
  #nextId = 1;

  constructor(deps: { store: JsonStore<QueryRecord>; clock: Clock }) {
    this.#store = deps.store;
    this.#clock = deps.clock;
  }

  async load(): Promise<void> {
    const loaded = await this.#store.loadAll((raw) => QueryRecordSchema.parse(raw));
    for (const rec of loaded.values()) {
      this.#records.set(rec.id, rec);
      this.#nextId = Math.max(this.#nextId, rec.id + 1);
    }
  }

  /** Saved queries of the team that are private (archived ones too: they still count). */
  privateCount(team: string): number {
    let n = 0;
    for (const rec of this.#records.values()) if (rec.team === team && rec.isPrivate) n++;
    return n;
  }

  get(id: number): QueryRecord | undefined {
    return this.#records.get(id);
  }

  /** The team's queries that are not temporary, newest first: `limit` from `offset`, and how many there are. */
  list(team: string, limit: number, offset: number): { page: QueryRecord[]; total: number } {
    const all = [...this.#records.values()].filter((r) => r.team === team && !r.isTemp).sort((a, b) => b.id - a.id);
    return { page: all.slice(offset, offset + limit), total: all.length };
  }

  /** Throws ParameterError when the parameters do not fit the SQL. */
  async create(team: string, req: CreateQueryRequest): Promise<QueryRecord> {
    const parameters = req.parameters ?? [];
    checkDeclarations(req.query_sql, parameters);
    const now = this.#clock.now();
    const rec: QueryRecord = {
      id: this.#nextId++,
      team,
      name: req.name,
      description: req.description ?? '',
      tags: req.tags ?? [],
      version: 1,
      parameters,
      sql: req.query_sql,
      isPrivate: req.is_private ?? false,
      isArchived: false,
      isTemp: req.is_temp ?? false,
      createdAt: now,
      updatedAt: now,
    };
    this.#records.set(rec.id, rec);
    await this.#store.put(String(rec.id), rec);
    return rec;
  }

  /** Throws ParameterError when the resulting parameters do not fit the resulting SQL. */
  async update(id: number, req: UpdateQueryRequest): Promise<QueryRecord> {
    const old = this.#records.get(id);
    if (old === undefined) throw new Error(`query ${id} vanished`);
    const sql = req.query_sql ?? old.sql;
    const parameters = req.parameters ?? old.parameters;
    checkDeclarations(sql, parameters);
    const changed = sql !== old.sql || JSON.stringify(parameters) !== JSON.stringify(old.parameters);
    const rec: QueryRecord = {
      ...old,
      name: req.name ?? old.name,
      description: req.description ?? old.description,
      tags: req.tags ?? old.tags,
      isPrivate: req.is_private ?? old.isPrivate,
      isArchived: req.is_archived ?? old.isArchived,
      isTemp: req.is_temp ?? old.isTemp,
      sql,
      parameters,
      version: changed ? old.version + 1 : old.version,
      updatedAt: this.#clock.now(),
    };
    this.#records.set(id, rec);
    await this.#store.put(String(id), rec);
    return rec;
  }
}

/** What GET /v1/query/{id} names as the engine (the official Python client requires the field). */
export const QUERY_ENGINE = 'DuckDB SQL';

export function queryView(rec: QueryRecord): Query {
  return {
    query_id: rec.id,
    name: rec.name,
    description: rec.description,
    tags: rec.tags,
    version: rec.version,
    parameters: rec.parameters.map(parameterView),
    query_sql: rec.sql,
    is_private: rec.isPrivate,
    is_archived: rec.isArchived,
    is_unsaved: false,
    is_temp: rec.isTemp,
    query_engine: QUERY_ENGINE,
    owner: rec.team,
  };
}
