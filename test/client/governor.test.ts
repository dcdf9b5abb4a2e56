import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { AbortedError, RateGovernor, ServiceClient, type ClientOptions } from '../../src/client/index.ts';
import { nextPollInterval } from '../../src/client/execution.ts';
import { startService, type ServiceHandle } from '../../src/service/index.ts';
import { testSettings, TEST_KEYS } from '../helpers/service.ts';

// The rate governor against the real service enforcing per-key limits from the teams' plans:
// demo's keys may make 120 reads a minute (a burst of 120, then 2 a second), other's 40 (free).
const READS_PER_MINUTE = 120;
let svc: ServiceHandle;
let dataDir: string;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'sluice-governor-'));
  const settings = testSettings();
  settings.teams[0]!.plan = { ...settings.teams[0]!.plan, rate_limit: { read: READS_PER_MINUTE } };
  settings.teams[1]!.plan = { ...settings.teams[1]!.plan, rate_limit: 'free' };
  settings.faults = { ...settings.faults, retry_after_seconds: 1 };
  svc = await startService({ dataDir, sampleRows: 100, settings });
});

afterAll(async () => {
  await svc.close();
  await rm(dataDir, { recursive: true, force: true });
});

/** `total` status requests by 4 concurrent callers; the 429s the service answered. */
async function reads(client: ServiceClient, executionId: string, total: number): Promise<number> {
  let left = total;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (left-- > 0) await client.getStatus(executionId);
    }),
  );
  return client.governor.tooMany('read');
}

function clientOf(key: string, extra: Partial<ClientOptions> = {}): { client: ServiceClient; refused: number[] } {
  const refused: number[] = [];
  const client = new ServiceClient({ baseUrl: svc.url, apiKey: key, env: {}, retry: { attempts: 10 }, ...extra, onRetry: (e) => { if (e.error.status === 429) refused.push(1); } });
  return { client, refused };
}

describe('rate governor', () => {
  it('spends a known per-key limit to the end with no 429', async () => {
    const throttled: { operation: string; waitedMs: number }[] = [];
    const { client, refused } = clientOf(TEST_KEYS.demo.write, { rateLimit: { read: READS_PER_MINUTE }, onThrottle: (e) => throttled.push(e) });
    try {
      const { execution_id } = await client.executeSql('SELECT 1 AS x');
      // The burst and a few seconds beyond it: without the governor, these would meet 429s.
      expect(await reads(client, execution_id, READS_PER_MINUTE + 8)).toBe(0);
      expect(refused).toEqual([]);
      // The reads beyond the burst waited for their tokens, and the hook was told (how telemetry counts rate-limit waits).
      expect(throttled.length).toBeGreaterThan(0);
      expect(throttled.every((e) => e.operation === 'getStatus' && e.waitedMs >= 1)).toBe(true);
    } finally {
      await client.close();
    }
  });

  it('with no limit given, learns one from the 429s and still completes every request', async () => {
    // other's key (free plan: 40 reads a minute), unknown to the client.
    const { client } = clientOf(TEST_KEYS.other.write);
    try {
      const { execution_id } = await client.executeSql('SELECT 1 AS x');
      expect(client.governor.perMinute('read')).toBe(0);
      const tooMany = await reads(client, execution_id, 44);
      expect(tooMany).toBeGreaterThan(0);
      // It now paces itself: a rate was learned from the refusals.
      expect(client.governor.perMinute('read')).toBeGreaterThan(0);
    } finally {
      await client.close();
    }
  });

  it('is one bucket per key in a process, and the same bucket in a worker thread handed its state', async () => {
    const a = new ServiceClient({ baseUrl: svc.url, apiKey: 'sk_shared_probe', env: {}, rateLimit: { read: 6 } });
    const b = new ServiceClient(a.connectionOptions());
    expect(b.governor).toBe(a.governor);
    const governorModule = new URL('../../src/client/governor.ts', import.meta.url).href;
    // The thread takes the whole burst (a minute's worth less one: 5) from the shared bucket.
    const worker = new Worker(
      `import { parentPort, workerData } from 'node:worker_threads';
       const { governorFor } = await import(${JSON.stringify(governorModule)});
       const g = governorFor('', '', workerData);
       for (let i = 0; i < 5; i++) await g.take('read', undefined, { method: 'probe' });
       parentPort.postMessage(g.perMinute('read'));`,
      { eval: true, workerData: a.connectionOptions().governor },
    );
    const [rpm] = await Promise.all([new Promise((resolve, reject) => worker.once('message', resolve).once('error', reject))]);
    await worker.terminate();
    expect(rpm).toBe(6);
    // Nothing left here: the next token is ten seconds away, so a short wait is cut off.
    await expect(a.governor.take('read', AbortSignal.timeout(300), { method: 'probe' })).rejects.toBeInstanceOf(AbortedError);
    await a.close();
    await b.close();
  });

  it('gives a shard of N its 1/N of the rate, by plan name or figures', () => {
    const g = new RateGovernor();
    g.configure({ read: 1000, write: 350 }, 1 / 4);
    expect(g.perMinute('read')).toBe(250);
    expect(g.perMinute('write')).toBe(87.5);
    const c = new ServiceClient({ baseUrl: 'http://127.0.0.1:9/api', apiKey: 'sk_plan_probe', env: {}, rateLimit: 'plus', rateShare: 0.5 });
    expect(c.governor.perMinute('read')).toBe(100);
    expect(c.governor.perMinute('write')).toBe(35);
  });

  it('rejects a rate limit that is no plan or not a positive rate, saying what is allowed', () => {
    const make = (o: Partial<ClientOptions>) => () => new ServiceClient({ baseUrl: 'http://127.0.0.1:9/api', apiKey: 'k', env: {}, ...o });
    expect(make({ rateLimit: 'gold' as never })).toThrow(/rateLimit "gold" is not a plan: use free, plus, enterprise/);
    expect(make({ rateLimit: { read: 0 } })).toThrow(/rateLimit\.read must be a positive number of requests per minute, got 0/);
    expect(make({ rateShare: 0 })).toThrow(/rateShare must be in \(0, 1\]/);
  });
});

describe('status polling under a rate limit', () => {
  it('keeps its doubling without a limit, and with one grows with the time taken, never closer than four tokens', () => {
    expect(nextPollInterval(1_000, 2_000, 60_000, 0)).toBe(2_000);
    // 40 a minute: a token every 1.5 s, so polls at least 6 s apart once past the cap.
    expect(nextPollInterval(1_000, 2_000, 1_000, 40)).toBe(2_000);
    expect(nextPollInterval(4_000, 2_000, 1_000, 40)).toBe(6_000);
    // Ten minutes in: a quarter of the time taken, capped at a minute.
    expect(nextPollInterval(6_000, 2_000, 120_000, 40)).toBe(30_000);
    expect(nextPollInterval(30_000, 2_000, 600_000, 40)).toBe(60_000);
  });
});
