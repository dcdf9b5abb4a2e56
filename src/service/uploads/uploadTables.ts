// Uploads v2, as the real service has them: a table created with a schema
// (`service.<team>.<table_name>`), rows appended from CSV or NDJSON, emptied, deleted, listed.
// Created tables and CSV uploads share one registry (Datasets) and one name space per team: a CSV
// upload is the table `dataset_<name>`, and can be deleted or cleared by that name too.
import type { CreateTableRequest, CreateTableResponse, InsertResponse, UploadColumn, UploadList } from '../../protocol/index.ts';
import type { Clock } from '../clock.ts';
import { EngineError } from '../engine/types.ts';
import { HttpError } from '../http/errors.ts';
import type { CreditLedger } from '../limits/credits.ts';
import { formatTimestamp as ts } from '../timestamp.ts';
import type { DatasetRecord, Datasets } from './datasets.ts';
import { csvHeader } from './csvHeader.ts';
import { UploadError } from './errors.ts';
import type { InsertRows, UploadTableOps } from './tableOps.ts';

/** Credits (the real service's prices): creating a table 10; writing rows 3 per GB, at least 1. */
export const CREATE_TABLE_CREDITS = 10;
export const CREDITS_PER_GB_WRITTEN = 3;
const GB = 1e9;

export function insertCredits(bytes: number): number {
  return Math.max(1, Math.ceil((bytes / GB) * CREDITS_PER_GB_WRITTEN));
}

/** The engine's name of a CSV upload's inferred type, as the protocol spells it. */
const ENGINE_TYPES: Record<string, string> = { BIGINT: 'bigint', DOUBLE: 'double', BOOLEAN: 'boolean', DATE: 'date', TIMESTAMP: 'timestamp', VARCHAR: 'varchar' };
export const protocolType = (t: string): string => ENGINE_TYPES[t] ?? t.toLowerCase();

export interface UploadTablesDeps {
  datasets: Datasets;
  ops: UploadTableOps;
  clock: Clock;
  ledger?: CreditLedger;
}

export class UploadTables {
  readonly #d: UploadTablesDeps;

  constructor(deps: UploadTablesDeps) {
    this.#d = deps;
  }

  async create(team: string, req: CreateTableRequest): Promise<CreateTableResponse> {
    checkNamespace(team, req.namespace);
    const fullName = `service.${team}.${req.table_name}`;
    const existing = this.#d.datasets.get(team, req.table_name);
    if (existing !== undefined || (await this.#d.ops.exists(team, req.table_name))) {
      throw new HttpError(409, `Conflict: the table ${fullName} already exists; insert into it, clear it, or delete it first`);
    }
    await this.#charge(team, CREATE_TABLE_CREDITS, async () => {
      await this.#d.ops.createTable(team, req.table_name, req.schema);
      const now = this.#d.clock.now();
      await this.#d.datasets.save({
        team,
        name: req.table_name,
        kind: 'table',
        description: req.description ?? '',
        isPrivate: req.is_private ?? false,
        columns: req.schema.map((c) => ({ name: c.name, type: c.type, nullable: c.nullable })),
        rowCount: 0,
        bytes: 0,
        createdAt: now,
        updatedAt: now,
      });
    });
    return {
      namespace: team,
      table_name: req.table_name,
      full_name: fullName,
      example_query: `SELECT * FROM ${fullName} LIMIT 10`,
      already_existed: false,
      message: `Created table ${fullName}`,
    };
  }

  async insert(team: string, namespace: string, table: string, rows: InsertRows): Promise<InsertResponse> {
    const rec = this.#table(team, namespace, table);
    if (rows.data.length === 0) throw new UploadError('Bad Request: the body is empty: send CSV (header first) or NDJSON rows');
    const columns: UploadColumn[] = rec.columns.map((c) => ({ name: c.name, type: c.type as UploadColumn['type'], nullable: c.nullable }));
    if (rec.kind === 'csv') throw new UploadError(`Bad Request: ${fullName(rec)} was uploaded as a CSV and is replaced whole by POST /v1/uploads/csv; rows are inserted into tables created with POST /v1/uploads`);
    const header = rows.format === 'csv' ? matchingHeader(csvHeader(rows.data.toString('utf8', 0, Math.min(rows.data.length, 1 << 20))), columns, fullName(rec)) : undefined;
    await this.#d.datasets.checkInsertQuota(team, rows.data.length);
    let written = 0;
    await this.#charge(team, insertCredits(rows.data.length), async () => {
      written = (await badRequest(() => this.#d.ops.insertRows(team, rec.name, columns, header === undefined ? rows : { ...rows, header }))).rowsWritten;
      await this.#d.datasets.save({ ...rec, rowCount: rec.rowCount + written, bytes: rec.bytes + rows.data.length, updatedAt: this.#d.clock.now() });
    });
    return { name: fullName(rec), rows_written: written, bytes_written: rows.data.length };
  }

  async clear(team: string, namespace: string, table: string): Promise<{ message: string }> {
    const rec = this.#table(team, namespace, table);
    await this.#d.ops.clearTable(team, rec.name);
    await this.#d.datasets.save({ ...rec, rowCount: 0, bytes: 0, updatedAt: this.#d.clock.now() });
    return { message: `Cleared table ${fullName(rec)}` };
  }

  async delete(team: string, namespace: string, table: string): Promise<{ message: string }> {
    const rec = this.#table(team, namespace, table);
    await this.#d.ops.drop(team, rec.name);
    await this.#d.datasets.forget(team, rec.name);
    return { message: `Deleted table ${fullName(rec)}` };
  }

  /** GET /v1/uploads: the team's tables (created and CSV-uploaded), oldest first. */
  list(team: string, limit: number, offset: number): UploadList {
    const all = this.#d.datasets
      .all()
      .filter((r) => r.team === team)
      .sort((a, b) => a.createdAt - b.createdAt || a.name.localeCompare(b.name));
    const tables = all.slice(offset, offset + limit).map((r) => ({
      full_name: fullName(r),
      is_private: r.isPrivate,
      table_size_bytes: String(r.bytes),
      created_at: ts(r.createdAt),
      updated_at: ts(r.updatedAt),
      owner: { handle: r.team, type: 'team' },
      columns: r.columns.map((c) => ({ name: c.name, type: protocolType(c.type), nullable: c.nullable })),
    }));
    return offset + limit < all.length ? { tables, next_offset: offset + limit } : { tables };
  }

  #table(team: string, namespace: string, table: string): DatasetRecord {
    checkNamespace(team, namespace);
    const rec = this.#d.datasets.get(team, table);
    if (rec === undefined) throw new HttpError(404, `Table not found: service.${team}.${table} (list the team's tables with GET /v1/uploads)`);
    return rec;
  }

  /** Runs `write` when the cycle has `credits` left (402 otherwise, nothing written); charged once it succeeded. */
  async #charge(team: string, credits: number, write: () => Promise<void>): Promise<void> {
    this.#d.ledger?.check(team, credits);
    await write();
    await this.#d.ledger?.charge(team, credits);
  }
}

/** The CSV header must name exactly the table's columns (in any order, case ignored): 400 naming the missing and the unknown ones. */
function matchingHeader(header: string[], columns: readonly UploadColumn[], table: string): string[] {
  const declared = new Map(columns.map((c) => [c.name.toLowerCase(), c.name]));
  const unknown = header.filter((h) => !declared.has(h.toLowerCase()));
  const given = new Set(header.map((h) => h.toLowerCase()));
  const missing = columns.filter((c) => !given.has(c.name.toLowerCase())).map((c) => c.name);
  if (unknown.length > 0 || missing.length > 0) {
    const parts = [unknown.length > 0 ? `unknown column${unknown.length > 1 ? 's' : ''} ${unknown.map((u) => `"${u}"`).join(', ')}` : '', missing.length > 0 ? `missing ${missing.map((m) => `"${m}"`).join(', ')}` : ''];
    throw new UploadError(`Bad Request: CSV line 1 (the header) must name the columns of ${table} (${columns.map((c) => c.name).join(', ')}): ${parts.filter(Boolean).join('; ')}`);
  }
  return header.map((h) => declared.get(h.toLowerCase())!);
}

function fullName(rec: DatasetRecord): string {
  return `service.${rec.team}.${rec.name}`;
}

/** The namespace is the key's team: another is 403 (a key writes only its own team's tables). */
function checkNamespace(team: string, namespace: string): void {
  if (namespace !== team) throw new HttpError(403, `Not allowed: this API key belongs to team ${team}; it cannot write tables in namespace "${namespace}"`);
}

async function badRequest<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof EngineError && err.kind === 'bad_request') throw new UploadError(`Bad Request: ${err.message}`);
    throw err;
  }
}
