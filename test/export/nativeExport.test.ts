// An export over the JSON wire of a service without Arrow pages (the real service: a proxy that
// speaks JSON only): with wire auto, a Parquet output is written natively (DuckDB, from the pages'
// text) and holds what the general path writes; a stopped export resumes per part; outputs the
// native path cannot write exactly go the general way, and say why.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tableFromIPC } from 'apache-arrow';
import { builtins } from '../../connectors/index.ts';
import { ServiceClient } from '../../src/client/index.ts';
import { openExport, resolveOutput, writeExport } from '../../src/export/index.ts';
import { arrowSchemaMetadata, nativeOutputReason, nativeRoute, type NativeMode } from '../../src/export/nativeExport.ts';
import { stream, type StreamOptions } from '../../src/pipeline/stream.ts';
import { duckRowsJS } from '../helpers/duckdb.ts';
import { startArrowProxy, type ArrowProxy } from '../helpers/arrowProxy.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

let svc: TestService;
let jsonOnly: ArrowProxy;
let client: ServiceClient;
let executionId: string;
const dirs: string[] = [];
const ROWS = 1_000;
const SQL = `SELECT i AS id, 'name ' || i AS name, i * 0.5 AS half, (i * 1.25)::DECIMAL(12, 2) AS amount, DATE '2024-01-01' + (i % 30)::INTEGER AS day,
  TIMESTAMPTZ '2024-01-01 00:00:00+00' + to_microseconds(i * 1001) AS ts FROM range(${ROWS}) t(i) ORDER BY i`;

beforeAll(async () => {
  svc = await startTestService({ limits: { page_rows: 64 } });
  jsonOnly = await startArrowProxy(svc.url, 'json');
  client = new ServiceClient({ baseUrl: jsonOnly.url, apiKey: svc.keys.demo.admin, env: {} });
  const execution = await client.execute({ sql: SQL });
  await execution.wait();
  executionId = execution.id;
});
afterAll(async () => {
  await client?.close();
  await jsonOnly?.close();
  await svc?.close();
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

async function outDir(): Promise<string> {
  const parent = await mkdtemp(join(tmpdir(), 'sluice-native-export-'));
  dirs.push(parent);
  return join(parent, 'out');
}

async function exportWith(output: Record<string, unknown>, options: { native?: NativeMode; wire?: StreamOptions['wire'] } = {}) {
  const path = await outDir();
  const s = stream(client, { executionId }, { wire: options.wire ?? 'auto' });
  const info = await s.info();
  const resolved = resolveOutput({ ...output, path }, builtins);
  const summary = await writeExport(
    { schema: await s.schema(), batches: s.batches(), meta: { executionId, totalRowCount: info.totalRows, pageSize: info.pageSize }, parts: await s.rangeReader() },
    resolved,
    { ...(options.native ? { native: options.native } : {}) },
  );
  return { path, summary };
}

const createdBy = async (file: string) => (await duckRowsJS(`SELECT created_by FROM parquet_file_metadata('${file}')`))[0]!['created_by'] as string;
const rows = (path: string) => duckRowsJS(`SELECT * FROM read_parquet('${path}/*.parquet') ORDER BY id`);

describe('native export over a JSON-only service', () => {
  it('with wire auto, a Parquet output is written by DuckDB and holds the rows the general path writes, with its Arrow schema', async () => {
    const output = { format: 'parquet', max_rows_per_file: 300 };
    const native = await exportWith(output);
    const general = await exportWith(output, { native: 'never' });
    expect(native.summary.files.map((f) => f.path)).toEqual(general.summary.files.map((f) => f.path));
    expect(native.summary.rows).toBe(ROWS);
    const first = join(native.path, native.summary.files[0]!.path);
    expect(await createdBy(first)).toMatch(/DuckDB/i);
    expect(await createdBy(join(general.path, general.summary.files[0]!.path))).not.toMatch(/DuckDB/i);
    expect(await rows(native.path)).toEqual(await rows(general.path));
    // Arrow readers see the general path's schema: the embedded ARROW:schema names the service types and the execution.
    const arrowSchemaOf = async (file: string) => {
      const kv = await duckRowsJS(`SELECT decode(value) AS value FROM parquet_kv_metadata('${file}') WHERE decode(key) = 'ARROW:schema'`);
      expect(kv).toHaveLength(1);
      return tableFromIPC(Buffer.from(kv[0]!['value'] as string, 'base64')).schema;
    };
    const schema = await arrowSchemaOf(first);
    const generalSchema = await arrowSchemaOf(join(general.path, general.summary.files[0]!.path));
    expect(schema.fields.map((f) => [f.name, String(f.type), Object.fromEntries(f.metadata)])).toEqual(generalSchema.fields.map((f) => [f.name, String(f.type), Object.fromEntries(f.metadata)]));
    expect(schema.fields.map((f) => f.metadata.get('service.type'))).toEqual(['bigint', 'varchar', 'decimal(21, 1)', 'decimal(12, 2)', 'date', 'timestamp(6) with time zone']);
    expect(Object.fromEntries(schema.metadata)).toEqual(Object.fromEntries(generalSchema.metadata));
    expect(schema.metadata.get('service.execution_id')).toBe(executionId);
  });

  it('reads the CSV pages by default, and writes from them the bytes it writes from the JSON pages', async () => {
    const s = stream(client, { executionId }, { wire: 'auto' });
    const schema = await s.schema();
    const output = resolveOutput({ format: 'parquet', path: 'out' }, builtins);
    expect(nativeRoute(output, schema, await s.rangeReader())).toMatchObject({ native: true, pages: 'csv' });
    expect(nativeRoute(output, schema, await s.rangeReader(), 'json')).toMatchObject({ native: true, pages: 'json' });
    const before = jsonOnly.seen.length;
    const csv = await exportWith({ format: 'parquet', max_rows_per_file: 300 }, { native: 'csv' });
    // The proxy records JSON result requests: over CSV pages, the export reads none past the stream's first page (16 pages of rows).
    expect(jsonOnly.seen.length - before).toBeLessThanOrEqual(2);
    const json = await exportWith({ format: 'parquet', max_rows_per_file: 300 }, { native: 'json' });
    expect(csv.summary.files.map((f) => f.path)).toEqual(json.summary.files.map((f) => f.path));
    for (const f of csv.summary.files) expect(Buffer.compare(await readFile(join(csv.path, f.path)), await readFile(join(json.path, f.path)))).toBe(0);
  });

  it('a stopped export keeps its stored parts; the next one writes only the rest, the same files', async () => {
    const output = resolveOutput({ format: 'parquet', max_rows_per_file: 200, path: await outDir() }, builtins);
    const fresh = await exportWith({ format: 'parquet', max_rows_per_file: 200 });
    const attemptId = 'native-resume';
    const stop = new AbortController();
    const first = await openExport(output, { executionId }, { resume: { attemptId }, keepOnStop: stop.signal });
    const read = async () => {
      const s = stream(client, { executionId }, { wire: 'auto' });
      const info = await s.info();
      return { schema: await s.schema(), batches: s.batches(), meta: { executionId, totalRowCount: info.totalRows, pageSize: info.pageSize }, parts: await s.rangeReader() };
    };
    const stopped = await first.write(await read(), { signal: stop.signal, onProgress: (p) => p.files >= 2 && stop.abort(new Error('stopped')) }).catch((e: unknown) => e);
    expect(stopped).toBeInstanceOf(Error);
    const second = await openExport(output, { executionId }, { resume: { attemptId } });
    expect(second.resumedFiles.length).toBeGreaterThanOrEqual(2);
    expect(second.resumedFiles.length).toBeLessThan(5);
    const summary = await second.write(await read());
    expect(summary.resumedFiles).toBe(second.resumedFiles.length);
    expect(summary.files.map((f) => f.path)).toEqual(fresh.summary.files.map((f) => f.path));
    // DuckDB writes the same bytes for the same rows: a resumed export's files are a fresh one's.
    for (const f of summary.files) expect(Buffer.compare(await readFile(join(output.path, f.path)), await readFile(join(fresh.path, f.path)))).toBe(0);
  });

  it('goes the general way, saying why, where it could not write the same file', async () => {
    const s = stream(client, { executionId }, { wire: 'auto' });
    const schema = await s.schema();
    const reader = await s.rangeReader();
    const at = (o: Record<string, unknown>) => resolveOutput({ path: 'out', ...o }, builtins);
    expect(nativeRoute(at({ format: 'parquet' }), schema, reader)).toMatchObject({ native: true });
    expect(nativeOutputReason(at({ format: 'csv' }))).toMatch(/csv format/);
    expect(nativeOutputReason(at({ format: 'parquet', partition_by: ['day'] }))).toMatch(/partition_by/);
    expect(nativeOutputReason(at({ format: 'parquet', format_options: { dictionary: false } }))).toMatch(/format_options.dictionary/);
    expect(nativeRoute(at({ format: 'parquet' }), schema, reader, 'never')).toMatchObject({ native: false });
    const asked = stream(client, { executionId }, { wire: 'json' });
    await asked.info();
    expect(nativeRoute(at({ format: 'parquet' }), schema, await asked.rangeReader())).toEqual({ native: false, reason: expect.stringContaining('wire: json') });
    expect(arrowSchemaMetadata(schema).length).toBeGreaterThan(100);
  });
});
