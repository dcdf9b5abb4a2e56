import { z } from 'zod';
import type { UploadCsvRequest } from '../../protocol/index.ts';
import type { Clock } from '../clock.ts';
import { JsonStore } from '../store.ts';
import type { ServiceTables } from '../engine/types.ts';
import { ingestCsv } from './csvIngest.ts';
import { StorageQuotaError } from './errors.ts';

export const DatasetRecordSchema = z.object({
  team: z.string(),
  /** `dataset_<table_name>` for a CSV upload, the table name for a table created with a schema. */
  name: z.string(),
  /** `csv`: POST /v1/uploads/csv (replaced whole); `table`: POST /v1/uploads, then inserts. */
  kind: z.enum(['csv', 'table']).default('csv'),
  description: z.string(),
  isPrivate: z.boolean(),
  /** Protocol type names for a table; the engine's (BIGINT, VARCHAR, ...) for a CSV upload. */
  columns: z.array(z.object({ name: z.string(), type: z.string(), nullable: z.boolean().default(true) })),
  rowCount: z.number().int().nonnegative(),
  bytes: z.number().int().nonnegative(),
  createdAt: z.number(),
  updatedAt: z.number(),
});
export type DatasetRecord = z.infer<typeof DatasetRecordSchema>;

export interface DatasetsDeps {
  tables: ServiceTables;
  clock: Clock;
  store?: JsonStore<DatasetRecord>;
  /**
   * The team's storage quota and what it stores besides its datasets (views, the tables its SQL
   * created). Absent: uploads are not limited.
   */
  quota?(team: string): Promise<{ limitBytes: number; otherBytes: number }>;
}

/** Uploaded CSV datasets: their tables live in DuckDB, their descriptions here (one file each). */
export class Datasets {
  readonly #records = new Map<string, DatasetRecord>();
  readonly #deps: DatasetsDeps;

  constructor(deps: DatasetsDeps) {
    this.#deps = deps;
  }

  async load(): Promise<void> {
    const loaded = await this.#deps.store?.loadAll((raw) => DatasetRecordSchema.parse(raw));
    for (const rec of loaded?.values() ?? []) this.#records.set(`${rec.team}.${rec.name}`, rec);
  }

  /** POST /v1/uploads/csv: creates or replaces `service.<team>.dataset_<table_name>`. Throws UploadError (400). */
  async upload(team: string, req: UploadCsvRequest): Promise<{ success: true; table_name: string; full_name: string; example_query: string }> {
    const name = `dataset_${req.table_name}`;
    await this.#checkQuota(team, name, Buffer.byteLength(req.data));
    const t = await ingestCsv(this.#deps.tables, { team, tableName: req.table_name, data: req.data });
    const now = this.#deps.clock.now();
    const prev = this.#records.get(`${team}.${name}`);
    const rec: DatasetRecord = {
      team,
      name,
      kind: 'csv',
      description: req.description ?? '',
      isPrivate: req.is_private ?? false,
      columns: t.columns.map((c) => ({ ...c, nullable: true })),
      rowCount: t.rowCount,
      bytes: t.bytes,
      createdAt: prev?.createdAt ?? now,
      updatedAt: now,
    };
    this.#records.set(`${team}.${name}`, rec);
    await this.#deps.store?.put(`${team}.${name}`, rec);
    return { success: true, table_name: t.fullName, full_name: t.fullName, example_query: `SELECT * FROM ${t.fullName} LIMIT 10` };
  }

  /** Refuses (402) an upload that would take the team past its quota; the dataset it replaces does not count. */
  async #checkQuota(team: string, name: string, bytes: number): Promise<void> {
    if (this.#deps.quota === undefined) return;
    const { limitBytes, otherBytes } = await this.#deps.quota(team);
    const datasets = this.storageBytes(team) - (this.#records.get(`${team}.${name}`)?.bytes ?? 0);
    if (otherBytes + datasets + bytes <= limitBytes) return;
    throw new StorageQuotaError(
      `This upload would exceed your team's storage quota: the CSV is ${bytes} bytes, and with the team's other datasets (${datasets} bytes) and its materialized views and tables (${otherBytes} bytes) that exceeds the quota of ${limitBytes} bytes. Nothing was stored; delete views or drop tables you no longer need, or upload fewer rows.`,
    );
  }

  get(team: string, name: string): DatasetRecord | undefined {
    return this.#records.get(`${team}.${name}`);
  }

  /** Every dataset of every team, in no particular order. */
  all(): DatasetRecord[] {
    return [...this.#records.values()];
  }

  /** Records a dataset (a table created, grown or emptied by the uploads routes). */
  async save(rec: DatasetRecord): Promise<void> {
    this.#records.set(`${rec.team}.${rec.name}`, rec);
    await this.#deps.store?.put(`${rec.team}.${rec.name}`, rec);
  }

  async forget(team: string, name: string): Promise<void> {
    this.#records.delete(`${team}.${name}`);
    await this.#deps.store?.remove(`${team}.${name}`);
  }

  /**
   * The quota check of an insert of `bytes` into a table created with a schema. Such tables are
   * measured with the team's other tables (`quota`'s otherBytes), not counted here.
   */
  async checkInsertQuota(team: string, bytes: number): Promise<void> {
    if (this.#deps.quota === undefined) return;
    const { limitBytes, otherBytes } = await this.#deps.quota(team);
    const datasets = this.storageBytes(team);
    if (otherBytes + datasets + bytes <= limitBytes) return;
    throw new StorageQuotaError(
      `This insert would exceed your team's storage quota: the rows are ${bytes} bytes, and with the team's uploaded CSVs (${datasets} bytes) and its materialized views and tables (${otherBytes} bytes) that exceeds the quota of ${limitBytes} bytes. Nothing was written; clear or delete tables you no longer need, or insert fewer rows.`,
    );
  }

  storageBytes(team: string): number {
    let sum = 0;
    // Tables created with a schema are measured with the team's tables (teamTableBytes).
    for (const r of this.#records.values()) if (r.team === team && r.kind === 'csv') sum += r.bytes;
    return sum;
  }
}

/** The datasets kept under `dir` (one record per table), loaded; `flush` waits for their writes. */
export async function openDatasets(
  tables: ServiceTables,
  clock: Clock,
  dir: string,
  quota?: DatasetsDeps['quota'],
): Promise<{ datasets: Datasets; flush(): Promise<void> }> {
  const store = new JsonStore<DatasetRecord>(dir);
  await store.init();
  const datasets = new Datasets({ tables, clock, store, ...(quota === undefined ? {} : { quota }) });
  await datasets.load();
  return { datasets, flush: () => store.flush() };
}
