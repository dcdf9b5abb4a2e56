// The wall under the allowlist: with the sandbox switched off (every statement passes its check),
// user SQL runs on an instance that DuckDB itself keeps away from the service's files. Stored
// results, their encodings and upload files live in the results directory, which only the
// engine's files instance opens; every way DuckDB has to read, list, attach or write a file
// fails there with DuckDB's permission error, and no stored row comes back.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, expect, test, vi } from 'vitest';
import { EngineError } from '../../../src/service/engine/index.ts';
import { Sandbox } from '../../../src/service/engine/sandbox/sandbox.ts';
import type { DuckDbEngine } from '../../../src/service/engine/engine.ts';
import { opts, startEngine, type EngineFixture } from './engineFixture.ts';

const CANARY = 'TOPSECRET-ROW-31c9';
let fx: EngineFixture;
let resultsDir = '';
/** Every file in the results directory once another team's result is stored and encoded. */
let stored: string[] = [];

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

beforeAll(async () => {
  fx = await startEngine({ sampleRows: 100 });
  resultsDir = join(fx.dataDir, 'results');
  // Big enough to be pre-encoded (JSON, CSV and Arrow files beside the result file).
  const o = opts({ team: 'other' });
  await fx.engine.execute(`SELECT range AS n, '${CANARY}-' || range AS secret FROM range(20000)`, o);
  await fx.engine.page(o.resultId, { offset: 0, limit: 1 });
  // Its first reads, as JSON, CSV and Arrow, write those encodings.
  for (const format of ['json', 'csv'] as const) await (await fx.engine.encodedPage(o.resultId, 0, 1, format))?.rows?.handle.close();
  // Its batches come from the encoder's buffers or from rows.arrow (a handle to close).
  for (const part of (await fx.engine.encodedArrowPage(o.resultId, 0, 20_000))?.parts ?? []) if (!(part instanceof Uint8Array)) await part.handle.close();
  await fx.engine.encodingSettled(o.resultId);
  stored = filesUnder(resultsDir);
});
afterEach(() => {
  vi.restoreAllMocks();
});
afterAll(async () => {
  await fx.close();
});

/** Runs `sql` as team demo with the allowlist off: DuckDB alone decides. */
async function withoutSandbox(sql: string): Promise<EngineError | string> {
  vi.spyOn(Sandbox.prototype, 'check').mockResolvedValue(undefined);
  const o = opts({ team: 'demo' });
  try {
    await fx.engine.execute(sql, o);
  } catch (err) {
    if (!(err instanceof EngineError)) throw err;
    return err;
  } finally {
    vi.restoreAllMocks();
  }
  return (await fx.engine.page(o.resultId, { offset: 0, limit: 100 })).rowsJson;
}

/** `alsoUnknown`: a replacement scan of a name DuckDB does not take for a file is an unknown table. */
function expectDuckDbRefusal(outcome: EngineError | string, sql: string, alsoUnknown = false): void {
  expect(outcome, sql).toBeInstanceOf(EngineError);
  const err = outcome as EngineError;
  expect(err.message, sql).toMatch(alsoUnknown ? /Permission Error|disabled by configuration|Table with name .* does not exist/ : /Permission Error|disabled by configuration/);
  expect(err.message, sql).not.toContain(CANARY);
}

test('the results directory holds another team result, its encodings and canary rows', () => {
  expect(stored.some((f) => f.endsWith('.duckdb'))).toBe(true);
  expect(stored.some((f) => f.includes('.enc'))).toBe(true);
  expect(stored.length).toBeGreaterThan(3);
});

test('with the allowlist off, DuckDB refuses every file of the results directory to user SQL', async () => {
  const readers = (path: string): string[] => [
    `SELECT * FROM read_text('${path}')`,
    `SELECT * FROM read_blob('${path}')`,
    `SELECT * FROM read_csv('${path}', header = false, all_varchar = true)`,
    `SELECT * FROM '${path}'`,
  ];
  for (const path of stored) {
    for (const sql of readers(path)) expectDuckDbRefusal(await withoutSandbox(sql), sql, sql.startsWith("SELECT * FROM '"));
  }
  for (const sql of [
    `SELECT * FROM glob('${resultsDir}/*')`,
    `SELECT * FROM read_text('${resultsDir}/**')`,
    `ATTACH '${stored.find((f) => f.endsWith('.duckdb'))}' AS stolen (READ_ONLY)`,
    `COPY (SELECT 1 AS x) TO '${join(resultsDir, 'planted.csv')}'`,
  ]) {
    expectDuckDbRefusal(await withoutSandbox(sql), sql);
  }
});

test("with the allowlist off, the issue's attack (SQL text bound by a scalar function) reads nothing", async () => {
  const csv = stored.find((f) => f.endsWith('.csv')) ?? stored[0]!;
  const sql = `SELECT json_serialize_plan('SELECT * FROM read_csv(''${csv}'', names = [''a''], skip = 2)') AS plan`;
  const outcome = await withoutSandbox(sql);
  const text = outcome instanceof EngineError ? outcome.message : outcome;
  expect(text).not.toContain(CANARY);
  expect(text).toMatch(/Permission Error|disabled by configuration/);
});

test('the instance of user SQL has no readable directory but its own spill directory', async () => {
  const engine = fx.engine as DuckDbEngine;
  const [dirs, paths] = await engine.withConnection(async (c) =>
    (await c.runAndReadAll("SELECT current_setting('allowed_directories')::VARCHAR, current_setting('allowed_paths')::VARCHAR")).getRowsJson()[0]!.map(String),
  );
  expect(dirs).not.toContain(resultsDir);
  // DuckDB adds the spill directory and the files of the catalogs attached when external access
  // went off (lockdown.ts): only those, none of the results directory.
  expect(dirs).toMatch(/^\[[^,]*tmp\/?\]$/);
  for (const p of paths!.slice(1, -1).split(', ')) expect(p).toMatch(/\/(engine|service)\.duckdb(\.wal(\.checkpoint|\.recovery)?)?$/);
});

test('with the allowlist on, the same statements are refused by the sandbox first', async () => {
  const o = opts({ team: 'demo' });
  const err = await fx.engine.execute(`SELECT * FROM read_text('${stored[0]}')`, o).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(EngineError);
  expect((err as EngineError).message).toMatch(/not allowed/i);
});
