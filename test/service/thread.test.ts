// The local service in a worker thread (what a job on the embedded default runs on): answers
// like the in-process one, reports a bad settings file with the same error, and ends its thread.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceClient } from '../../src/client/index.ts';
import { connect } from '../../src/jobs/run/connect.ts';
import { SettingsError } from '../../src/service/settings.ts';
import { startServiceThread } from '../../src/service/thread.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-service-thread-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('startServiceThread', () => {
  it('runs the service on another thread; queries work; close ends the thread', async () => {
    const key = 'sk_thread_admin';
    const svc = await startServiceThread({
      dataDir: join(dir, 'a'),
      sampleRows: 500,
      settings: { teams: [{ name: 'demo', keys: [{ key, scopes: ['Admin'] }] }] },
    });
    const client = new ServiceClient({ baseUrl: svc.url, apiKey: key, env: {} });
    try {
      expect(svc.threadId).toBeGreaterThan(0);
      const rows = await client.run('SELECT count(*) AS n FROM sample.events');
      expect(rows).toEqual([{ n: 500n }]);
    } finally {
      await client.close();
      await svc.close();
    }
    await expect(fetch(`${svc.url}/v1/usage`)).rejects.toThrow();
  });

  it('a bad settings file is a SettingsError naming the file, and no thread is left', async () => {
    const file = join(dir, 'bad.yaml');
    await writeFile(file, 'teams: [{ name: demo, keys: [{ key: k, scopes: [Nope] }] }]\n');
    const failure = startServiceThread({ dataDir: join(dir, 'b'), settings: file });
    await expect(failure).rejects.toBeInstanceOf(SettingsError);
    await expect(failure).rejects.toThrow(/bad\.yaml/);
  });

  it('connect() starts the embedded default on a thread of its own', async () => {
    const connection = await connect({ embedded: { data_dir: join(dir, 'c'), sample_rows: 100 } } as never, { env: {}, cwd: dir });
    try {
      expect(connection.embedded).toBe(true);
      expect(await connection.client.run('SELECT count(*) AS n FROM sample.events')).toEqual([{ n: 100n }]);
      // The thread's own heap (the soak splits the process's memory by thread with it).
      const heap = await connection.serviceHeap!();
      expect(heap.used_heap_size).toBeGreaterThan(0);
      expect(heap.used_heap_size).toBeLessThanOrEqual(heap.total_heap_size);
    } finally {
      await connection.close();
    }
  });
});
