// How a stream starts on an execution id: the first page is asked for together with the status
// (one round trip to start, not two), and used only when the status says the result is complete.
// The real local service behind a proxy that sees the order of the requests and can hold the
// status answer back until the first page has been asked for.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExecutionFailedError, PartialResultError, ServiceClient, type RetryEvent } from '../../src/client/index.ts';
import { stream } from '../../src/pipeline/stream.ts';
import { startProxy } from '../helpers/proxy.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

const PAGE_ROWS = 100;
const EVENTS = 'SELECT * FROM sample.events ORDER BY id';
/** Runs for a while (well beyond one status round trip), then completes with one row. */
const SLOW_SQL = 'SELECT max(a.range + b.range) AS n FROM range(200000) a, range(500) b';

let svc: TestService;
let client: ServiceClient;

beforeAll(async () => {
  svc = await startTestService({ limits: { page_rows: PAGE_ROWS } });
  client = new ServiceClient({ baseUrl: svc.url, apiKey: svc.keys.demo.write });
});
afterAll(async () => {
  await client?.close();
  await svc?.close();
});

/** How one request through the proxy ended: its status, or 'failed' (the service unreachable), and why. */
interface Answer {
  entry: string;
  status: number | 'failed';
  error?: unknown;
}

/**
 * A proxy logging every request (`status`, or `results@offset`) in arrival order, how each was
 * answered (`answers`), and the client's retries with their reasons (`retries`). With `gate`, a
 * status answer is held back until a result page has been asked for, or 10 s have passed: a
 * stream that asks for its first page only after the status answer then waits the 10 s, and
 * `statusWaited` says so.
 */
async function watched(options: { gate?: boolean } = {}) {
  const log: string[] = [];
  const answers: Answer[] = [];
  const retries: RetryEvent[] = [];
  const entryOf = (url: string) => {
    const u = new URL(url, 'http://x');
    if (u.pathname.endsWith('/status')) return 'status';
    return u.pathname.endsWith('/results') ? `results@${u.searchParams.get('offset') ?? 0}` : u.pathname;
  };
  let pageAsked!: () => void;
  const asked = new Promise<void>((resolve) => (pageAsked = resolve));
  let statusWaited = false;
  const watchers: { entry: string; found: () => void }[] = [];
  const proxy = await startProxy(
    svc.url,
    (url) => {
      const u = new URL(url, 'http://x');
      for (const w of watchers) if (u.pathname.endsWith('/results') && w.entry === `results@${u.searchParams.get('offset') ?? 0}`) w.found();
      if (u.pathname.endsWith('/status')) log.push('status');
      else if (u.pathname.endsWith('/results')) {
        log.push(`results@${u.searchParams.get('offset') ?? 0}`);
        pageAsked();
      } else log.push(u.pathname);
      return undefined;
    },
    async (url) => {
      if (!options.gate || !new URL(url, 'http://x').pathname.endsWith('/status')) return;
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => (timer = setTimeout(() => ((statusWaited = true), resolve()), 10_000)));
      await Promise.race([asked, late]);
      clearTimeout(timer);
    },
    (url, status, error) => answers.push({ entry: entryOf(url), status, ...(error === undefined ? {} : { error }) }),
  );
  const own = new ServiceClient({ baseUrl: proxy.url, apiKey: svc.keys.demo.write, onRetry: (e) => retries.push(e) });
  return {
    client: own,
    log,
    answers,
    retries,
    statusWaited: () => statusWaited,
    /** True once `entry` (`results@offset`) has been asked for; false after 10 s without. */
    seen: (entry: string) =>
      new Promise<boolean>((resolve) => {
        if (log.includes(entry)) return resolve(true);
        const timer = setTimeout(() => resolve(false), 10_000);
        watchers.push({ entry, found: () => (clearTimeout(timer), resolve(true)) });
      }),
    close: async () => {
      await own.close();
      await proxy.close();
    },
  };
}

const collect = async (iterable: AsyncIterable<Record<string, unknown>>) => {
  const rows: Record<string, unknown>[] = [];
  for await (const row of iterable) rows.push(row);
  return rows;
};

describe('a finished execution', () => {
  it.each(['json', 'auto'] as const)('wire %s: the first page is asked for before the status answer arrives, and read once', async (wire) => {
    const e = await client.execute({ sql: EVENTS });
    await e.wait();
    const expected = await collect(stream(client, { executionId: e.id }, { wire: 'json' }));
    const w = await watched({ gate: true });
    try {
      const s = stream(w.client, { executionId: e.id }, { wire, concurrency: 2 });
      let rows = 0;
      if (wire === 'auto') for await (const b of s.batches()) rows += b.numRows;
      else expect(await collect(s)).toEqual(expected);
      if (wire === 'auto') expect(rows).toBe(expected.length);
      expect(w.statusWaited()).toBe(false);
      // One status, then every page served once: the early first page stood for the first page.
      const pages = Math.ceil(expected.length / PAGE_ROWS);
      const grid = Array.from({ length: pages }, (_, i) => `results@${i * PAGE_ROWS}`);
      expect(w.log.filter((r) => r === 'status')).toHaveLength(1);
      const served = w.answers.filter((a) => a.entry.startsWith('results@') && a.status === 200).map((a) => a.entry);
      expect(served.toSorted(), 'each page of the grid served exactly once').toEqual(grid.toSorted());
      // A request the service refused (503 short of memory, 429) or that never reached it is the
      // client's retry, not a page read twice: each is one retry of the client, with its reason.
      const refused = w.answers.filter((a) => a.entry.startsWith('results@') && a.status !== 200);
      const why = JSON.stringify({ refused: refused.map((a) => ({ ...a, error: a.error === undefined ? undefined : String(a.error) })), retries: w.retries.map((r) => ({ operation: r.operation, attempt: r.attempt, error: `${r.error.code}: ${r.error.message}` })) });
      expect(w.retries.every((r) => r.operation === 'getResults'), why).toBe(true);
      expect(refused.length, why).toBe(w.retries.length);
      expect(w.log.filter((r) => r.startsWith('results@'))).toHaveLength(pages + w.retries.length);
      expect(s.progress?.rows).toBe(expected.length);
      expect(w.client.stats).toEqual({ requests: 1 + pages + w.retries.length, retries: w.retries.length });
    } finally {
      await w.close();
    }
  });

  it.each(['json', 'auto'] as const)('wire %s: the next pages are asked for while the consumer still holds the first page', async (wire) => {
    const e = await client.execute({ sql: EVENTS });
    await e.wait();
    const w = await watched();
    try {
      const s = stream(w.client, { executionId: e.id }, { wire, concurrency: 2 });
      const it = wire === 'auto' ? s.batches() : s.rows();
      expect((await it.next()).done).toBe(false);
      // The consumer has its first row or batch and asks for nothing more: the fan-out is already under way.
      expect(await w.seen(`results@${PAGE_ROWS}`)).toBe(true);
      expect(await w.seen(`results@${2 * PAGE_ROWS}`)).toBe(true);
      // Leaving now stops the fetching, with nothing left running.
      await it.return(undefined);
      const requests = w.client.stats.requests;
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(w.client.stats.requests).toBe(requests);
    } finally {
      await w.close();
    }
  });

  it('a resumed read (startOffset) asks early for the page of the grid holding it', async () => {
    const e = await client.execute({ sql: EVENTS });
    await e.wait();
    const expected = await collect(stream(client, { executionId: e.id }, { wire: 'json' }));
    const w = await watched({ gate: true });
    try {
      const rows = await collect(stream(w.client, { executionId: e.id }, { wire: 'json', startOffset: 250, pageSize: PAGE_ROWS }));
      expect(rows).toEqual(expected.slice(250));
      expect(w.statusWaited()).toBe(false);
      expect(w.log.filter((r) => r === 'results@200')).toHaveLength(1);
      expect(w.log.some((r) => r === 'results@0' || r === 'results@250')).toBe(false);
    } finally {
      await w.close();
    }
  });

  it('ready() first, then the rows: the status is asked once and the first page after it, as before', async () => {
    const e = await client.execute({ sql: EVENTS });
    await e.wait();
    const w = await watched();
    try {
      const s = stream(w.client, { executionId: e.id }, { wire: 'json' });
      expect((await s.ready()).status.state).toBe('QUERY_STATE_COMPLETED');
      expect(w.log).toEqual(['status']);
      expect((await collect(s)).length).toBeGreaterThan(PAGE_ROWS);
      expect(w.log.filter((r) => r === 'status')).toHaveLength(1);
      expect(w.log.filter((r) => r === 'results@0')).toHaveLength(1);
    } finally {
      await w.close();
    }
  });
});

describe('an execution not finished, failed or partial', () => {
  it('still running: the early page is dropped, the status polled until COMPLETED, and the first page read again', async () => {
    const e = await client.execute({ sql: SLOW_SQL });
    const w = await watched();
    try {
      const rows = await collect(stream(w.client, { executionId: e.id }, { wire: 'json' }));
      expect(rows).toHaveLength(1);
      expect(rows[0]!.n).toBe(200_498n);
      // The early page came back without a result (still running), so offset 0 was asked for again after the wait.
      expect(w.log.filter((r) => r === 'status').length).toBeGreaterThan(1);
      expect(w.log.filter((r) => r === 'results@0')).toHaveLength(2);
      expect(w.log.indexOf('results@0', 1)).toBeGreaterThan(w.log.lastIndexOf('status'));
    } finally {
      await w.close();
    }
  });

  it('failed: the same ExecutionFailedError as from the status, and no page is read after it', async () => {
    const e = await client.execute({ sql: 'SELECT no_such_column FROM sample.events' });
    await expect(e.wait()).rejects.toThrow(ExecutionFailedError);
    const w = await watched();
    try {
      const failure = await stream(w.client, { executionId: e.id }).info().catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(ExecutionFailedError);
      expect((failure as ExecutionFailedError).message).toMatch(/^execution failed: /);
      expect((failure as ExecutionFailedError).url).toMatch(/\/status$/);
      expect(w.log.filter((r) => r.startsWith('results@'))).toEqual(['results@0']);
    } finally {
      await w.close();
    }
  });

  it('partial: PartialResultError unless allowed; allowed, the early page is dropped and the rows read as before', async () => {
    const small = await startTestService({ limits: { page_rows: PAGE_ROWS, max_result_bytes: 20_000 } });
    const smallClient = new ServiceClient({ baseUrl: small.url, apiKey: small.keys.demo.write });
    try {
      const e = await smallClient.execute({ sql: EVENTS });
      await expect(e.wait()).rejects.toThrow(PartialResultError);
      await expect(stream(smallClient, { executionId: e.id }).info()).rejects.toThrow(PartialResultError);
      const rows = await collect(stream(smallClient, { executionId: e.id }, { allowPartialResults: true, wire: 'json' }));
      const all = await collect(stream(client, { sql: EVENTS }, { wire: 'json' }));
      expect(rows.length).toBeGreaterThan(0);
      expect(rows.length).toBeLessThan(all.length);
      expect(rows).toEqual(all.slice(0, rows.length));
    } finally {
      await smallClient.close();
      await small.close();
    }
  });
});
