import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtins } from '../../connectors/index.ts';
import { ServiceClient } from '../../src/client/index.ts';
import { resolveOutput, startThreadsFor, writeExport } from '../../src/export/index.ts';
import { idlePartThreads } from '../../src/export/partWorkers.ts';
import { stream } from '../../src/pipeline/stream.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

// Part threads started ahead of an export (as soon as the result's size is known) wait idle, and
// the export then writes with them. This file has a process (so a pool of part threads) of its own.

let svc: TestService;
let client: ServiceClient;
let executionId: string;
let parent: string;
const ROWS = 1_000;

beforeAll(async () => {
  svc = await startTestService({ limits: { page_rows: 100 } });
  client = new ServiceClient({ baseUrl: svc.url, apiKey: svc.keys.demo.admin, env: {} });
  const execution = await client.execute({ sql: `SELECT i AS id, 'name ' || i AS name FROM range(${ROWS}) t(i) ORDER BY i` });
  await execution.wait();
  executionId = execution.id;
  parent = await mkdtemp(join(tmpdir(), 'sluice-thread-start-'));
});
afterAll(async () => {
  await client?.close();
  await svc?.close();
  await rm(parent, { recursive: true, force: true });
});

const output = (name: string, extra: Record<string, unknown> = {}) => resolveOutput({ format: 'parquet', path: join(parent, name), max_rows_per_file: 200, ...extra }, builtins);

describe('part threads started ahead', () => {
  it('start only for outputs part threads write, only as many as the parts and rows are worth', () => {
    startThreadsFor(output('serial', { partition_by: ['id'] }), 2, ROWS);
    startThreadsFor(output('one-file', { max_rows_per_file: undefined }), 2, ROWS);
    startThreadsFor(output('one-part'), 4, 150);
    // auto: a thousand rows pay for no thread.
    startThreadsFor(output('auto'), 'auto', ROWS, 'json');
    expect(idlePartThreads()).toBe(0);
    startThreadsFor(output('two'), 2, ROWS);
    expect(idlePartThreads()).toBe(2);
    // Asked again (another output of the same run): the idle ones count.
    startThreadsFor(output('two-again'), 2, ROWS);
    expect(idlePartThreads()).toBe(2);
  });

  it('the export writes with the threads started ahead, the same bytes as one thread, and leaves them idle for the next', async () => {
    const write = async (name: string, workers: number) => {
      const s = stream(client, { executionId }, { wire: 'json' });
      const info = await s.info();
      return writeExport(
        { schema: await s.schema(), batches: s.batches(), meta: { executionId, totalRowCount: info.totalRows, pageSize: info.pageSize }, parts: await s.rangeReader() },
        output(name),
        { workers },
      );
    };
    expect(idlePartThreads()).toBe(2);
    const many = await write('many', 2);
    expect(idlePartThreads()).toBe(2);
    const one = await write('one', 1);
    expect(many.files.map((f) => f.path)).toEqual(one.files.map((f) => f.path));
    for (const f of one.files) expect(Buffer.compare(await readFile(join(parent, 'many', f.path)), await readFile(join(parent, 'one', f.path))), f.path).toBe(0);
  });
});
