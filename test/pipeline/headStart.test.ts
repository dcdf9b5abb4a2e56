// The first CSV pages a native export asks for ahead of its first page (`headStart()`), against the
// real local service over HTTP: a client that has seen its service answer a page as Arrow asks for
// none on its next reads (the service would encode CSV no output reads); a service that serves JSON
// and CSV only (the real one, here a proxy that ignores Accept) gets them on every read.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceClient } from '../../src/client/index.ts';
import { stream } from '../../src/pipeline/stream.ts';
import { startArrowProxy, type ArrowProxy } from '../helpers/arrowProxy.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

const EVENTS = 'SELECT * FROM sample.events ORDER BY id';

let svc: TestService;
let jsonOnly: ArrowProxy;
/** CSV page requests each client sent, by URL. */
const csvUrls: string[] = [];
let client: ServiceClient;
let jsonClient: ServiceClient;

beforeAll(async () => {
  svc = await startTestService({ limits: { page_rows: 100 } });
  jsonOnly = await startArrowProxy(svc.url, 'json');
  const onRequest = (event: { url: string }) => {
    if (/\/results\/csv/.test(event.url)) csvUrls.push(event.url);
  };
  // Neither client is told its service serves Arrow pages: a `sluice serve` reached by URL.
  client = new ServiceClient({ baseUrl: svc.url, apiKey: svc.keys.demo.write, env: {}, onRequest });
  jsonClient = new ServiceClient({ baseUrl: jsonOnly.url, apiKey: svc.keys.demo.write, env: {}, onRequest });
});
afterAll(async () => {
  await client?.close();
  await jsonClient?.close();
  await jsonOnly?.close();
  await svc?.close();
});

/** Reads the first page of a finished execution as a run that may export natively does, and its range reader. */
async function openWithHead(c: ServiceClient) {
  const e = await c.execute({ sql: EVENTS });
  await c.execution(e.id).wait();
  const s = stream(c, { executionId: e.id });
  s.headStart();
  const info = await s.info();
  const reader = await s.rangeReader();
  return { id: e.id, info, reader, csvRequests: () => csvUrls.filter((u) => u.includes(e.id)).length };
}

describe('headStart', () => {
  it('a client whose service answered a page as Arrow asks for no CSV pages ahead on its next read', async () => {
    // The first read cannot know: it asks for the CSV page with the first page, stopped when that came as Arrow.
    const first = await openWithHead(client);
    expect(first.reader?.options.wire).toBe('arrow');
    expect(first.reader?.csvHead).toBeDefined();
    const next = await openWithHead(client);
    expect(next.reader?.options.wire).toBe('arrow');
    expect(next.reader?.csvHead).toBeUndefined();
    expect(next.csvRequests()).toBe(0);
  });

  it('a service that serves JSON and CSV only gets the first CSV page ahead on every read', async () => {
    for (let read = 0; read < 2; read++) {
      const opened = await openWithHead(jsonClient);
      expect(opened.reader?.options.wire).toBe('json');
      const head = opened.reader?.csvHead;
      expect(head).toBeDefined();
      const page = await head!.take({ offset: 0, limit: opened.info.pageSize }, new AbortController().signal);
      expect(page?.page.nextOffset).toBe(opened.info.pageSize);
      expect(opened.csvRequests()).toBeGreaterThan(0);
      head!.stop();
    }
  });
});
