// `sluice upload create|insert|clear|delete|list` and `sluice datasets list|search`, in process,
// against the real service; the client's catalog calls under them; exit codes of bad input.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/commands/index.ts';
import { EXIT } from '../../src/cli/exitCodes.ts';
import type { CliIo, OutputStream } from '../../src/cli/io.ts';
import { ConflictError, InvalidArgumentError, NotFoundError, ServiceClient } from '../../src/client/index.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { runSql } from '../service/api.ts';

let svc: TestService;
let dir: string;
beforeAll(async () => {
  svc = await startTestService();
  dir = await mkdtemp(join(tmpdir(), 'sluice-upload-cli-'));
});
afterAll(async () => {
  await svc?.close();
  await rm(dir, { recursive: true, force: true });
});

function capture(): OutputStream & { text(): string } {
  let text = '';
  return { write: (c: string | Uint8Array) => ((text += String(c)), true), once: () => undefined, text: () => text };
}

async function cli(args: string[], stdin = ''): Promise<{ code: number; out: string; err: string }> {
  const out = capture();
  const err = capture();
  const input = new PassThrough();
  input.end(stdin);
  const io: CliIo = { stdout: out, stderr: err, stdin: input, env: { SERVICE_BASE_URL: svc.url, SERVICE_API_KEY: svc.keys.demo.write }, cwd: dir };
  const code = await runCli([...args, '--log-format', 'json'], { io, signal: new AbortController().signal });
  return { code, out: out.text(), err: err.text() };
}

describe('sluice upload (tables with a schema)', () => {
  it('creates, inserts CSV and NDJSON (stdin too), lists, clears and deletes; the rows are queryable', async () => {
    const made = await cli(['upload', 'create', 'demo.cli_t', '--column', 'id:bigint!', '--column', 'who:varchar', '--description', 'from the CLI']);
    expect(made.code, made.err).toBe(0);
    expect(JSON.parse(made.out)).toMatchObject({ full_name: 'service.demo.cli_t', example_query: 'SELECT * FROM service.demo.cli_t LIMIT 10' });
    await writeFile(join(dir, 'rows.csv'), 'who,id\nann,1\n');
    await writeFile(join(dir, 'rows.ndjson'), '{"id":2,"who":"bo"}\n');
    expect(JSON.parse((await cli(['upload', 'insert', 'service.demo.cli_t', 'rows.csv'])).out)).toMatchObject({ rows_written: 1 });
    expect(JSON.parse((await cli(['upload', 'insert', 'demo.cli_t', 'rows.ndjson'])).out)).toMatchObject({ rows_written: 1 });
    expect(JSON.parse((await cli(['upload', 'insert', 'demo.cli_t', '-', '--format', 'ndjson'], '{"id":3}\n')).out)).toMatchObject({ rows_written: 1 });
    const id = await runSql(svc, 'SELECT id, who FROM service.demo.cli_t ORDER BY id');
    const page = await fetch(`${svc.url}/v1/execution/${id}/results`, { headers: { 'x-service-api-key': svc.keys.demo.read } });
    expect(((await page.json()) as any).result.rows).toEqual([{ id: 1, who: 'ann' }, { id: 2, who: 'bo' }, { id: 3, who: null }]);
    const listing = await cli(['upload', 'list']);
    expect(listing.code, listing.err).toBe(0);
    const listed = JSON.parse(listing.out);
    expect(listed.tables.map((t: any) => t.full_name)).toContain('service.demo.cli_t');
    expect(JSON.parse((await cli(['datasets', 'search', 'cli_t', '--schema'])).out).results[0]).toMatchObject({ full_name: 'service.demo.cli_t', schema: { columns: [{ name: 'id' }, { name: 'who' }] } });
    expect(JSON.parse((await cli(['datasets', 'list', '--owner', 'demo', '--type', 'uploaded_table'])).out).datasets.map((d: any) => d.full_name)).toContain('service.demo.cli_t');
    expect(JSON.parse((await cli(['upload', 'clear', 'demo.cli_t'])).out)).toEqual({ message: 'Cleared table service.demo.cli_t' });
    expect(JSON.parse((await cli(['upload', 'delete', 'demo.cli_t'])).out)).toEqual({ message: 'Deleted table service.demo.cli_t' });
  });

  it('bad input exits 2 with the reason, before any request; a missing table is exit 2 (404), an existing one 1 (409)', async () => {
    for (const [args, msg] of [
      [['upload', 'create', 'cli_t', '--column', 'a:bigint'], /TABLE must be TEAM\.TABLE/],
      [['upload', 'create', 'demo.x'], /give the columns/],
      [['upload', 'create', 'demo.x', '--column', 'a:text'], /--column must be NAME:TYPE.*got "a:text"/],
      [['upload', 'insert', 'demo.x', 'f.csv', '--format', 'xml'], /--format must be csv or ndjson/],
      [['datasets', 'list', '--type', 'nope'], /--type must be one of/],
      [['upload', 'list', '--limit', '0'], /--limit must be a whole number of at least 1/],
    ] as const) {
      const r = await cli([...args]);
      expect(r.code, args.join(' ')).toBe(EXIT.config);
      expect(r.err, args.join(' ')).toMatch(msg);
    }
    const missing = await cli(['upload', 'clear', 'demo.nothing_here']);
    expect(missing.code).toBe(EXIT.config);
    expect(missing.err).toMatch(/Table not found: service\.demo\.nothing_here/);
    await cli(['upload', 'create', 'demo.twice', '--column', 'a:varchar']);
    const again = await cli(['upload', 'create', 'demo.twice', '--column', 'a:varchar']);
    expect(again.code).toBe(EXIT.other);
    expect(again.err).toMatch(/409 Conflict: the table service\.demo\.twice already exists/);
  });
});

describe('the client catalog', () => {
  it('creates, inserts, lists and deletes; refuses a bad schema before sending; 404 and 409 as typed errors', async () => {
    const c = new ServiceClient({ baseUrl: svc.url, apiKey: svc.keys.demo.write });
    try {
      expect(await c.catalog.createTable({ namespace: 'demo', table_name: 'lib_t', schema: [{ name: 'n', type: 'bigint' }] })).toMatchObject({ full_name: 'service.demo.lib_t' });
      expect(await c.catalog.insertRows('demo', 'lib_t', 'n\n1\n2\n', 'csv')).toEqual({ name: 'service.demo.lib_t', rows_written: 2, bytes_written: 6 });
      expect((await c.catalog.listTables()).tables.find((t) => t.full_name === 'service.demo.lib_t')).toMatchObject({ table_size_bytes: '6' });
      expect((await c.catalog.getDataset('service.demo.lib_t')).columns).toEqual([{ name: 'n', type: 'bigint', nullable: true }]);
      const before = c.stats.requests;
      await expect(c.catalog.createTable({ namespace: 'demo', table_name: 'Bad', schema: [{ name: 'n', type: 'bigint' }] })).rejects.toBeInstanceOf(InvalidArgumentError);
      expect(c.stats.requests).toBe(before);
      await expect(c.catalog.createTable({ namespace: 'demo', table_name: 'lib_t', schema: [{ name: 'n', type: 'bigint' }] })).rejects.toBeInstanceOf(ConflictError);
      await expect(c.catalog.clearTable('demo', 'nope')).rejects.toBeInstanceOf(NotFoundError);
      expect(await c.catalog.deleteTable('demo', 'lib_t')).toEqual({ message: 'Deleted table service.demo.lib_t' });
      const q = await c.createQuery({ name: 'listed', query_sql: 'SELECT 1' });
      expect((await c.catalog.listQueries({ limit: 1 })).queries[0]).toMatchObject({ id: q.query_id, name: 'listed' });
      await c.catalog.setQueryPrivate(q.query_id, true);
      expect((await c.getQuery(q.query_id)).is_private).toBe(true);
    } finally {
      await c.close();
    }
  });
});
