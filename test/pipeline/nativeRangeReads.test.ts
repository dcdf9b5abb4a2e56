// The native path reads each part of an export as a row range: the pages holding the part's rows
// and no others. Counted on the wire, through a proxy in front of the local service: a part must
// not follow next_offset past its last row (each part read the result to its end before, some
// 2.5x the bytes of the result for an export of four parts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ServiceClient } from '../../src/client/index.ts';
import { stream } from '../../src/pipeline/stream.ts';
import { nativeColumns, type NativeColumn } from '../../src/pipeline/nativeWire/duckdbColumns.ts';
import { writeNativeParts, type NativePart } from '../../src/pipeline/nativeWire/nativeParts.ts';
import { withDuckDb } from '../helpers/duckdb.ts';
import { startProxy } from '../helpers/proxy.ts';
import { startTestService, TEST_KEYS, type TestService } from '../helpers/service.ts';

let svc: TestService;
let dir: string;

beforeAll(async () => {
  svc = await startTestService({ limits: { page_rows: 5 } });
  dir = await mkdtemp(join(tmpdir(), 'sluice-native-ranges-'));
});
afterAll(async () => {
  await svc?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('native parts read their own pages', () => {
  for (const pages of ['csv', 'json'] as const) {
    it(`asks over ${pages} pages for the pages of each part only, and writes every row once`, async () => {
      const requests: string[] = [];
      const proxy = await startProxy(svc.url, (url) => {
        if (url.includes('/results')) requests.push(new URL(url, 'http://x').searchParams.get('offset') ?? '');
        return undefined;
      });
      const client = new ServiceClient({ baseUrl: proxy.url, apiKey: TEST_KEYS.demo.admin });
      try {
        const execution = await client.execute({ sql: 'SELECT id FROM sample.events ORDER BY id LIMIT 40' });
        await execution.wait();
        const s = stream(client, { executionId: execution.id }, { wire: 'json' });
        const info = await s.info();
        const reader = (await s.rangeReader())!;
        const native = nativeColumns(info.columns, pages);
        if (!('columns' in native)) throw new Error(native.reason);
        requests.length = 0;
        // Parts of 12 rows on pages of 5: the second part starts and the third ends mid-page.
        const parts: NativePart[] = [0, 1, 2, 3].map((index) => ({ index, firstRow: index * 12, rows: Math.min(12, 40 - index * 12) }));
        const files: string[] = [];
        await writeNativeParts({
          reader,
          specs: info.columns,
          columns: native.columns as NativeColumn[],
          pages,
          parts,
          parquet: { compression: 'zstd', rowGroupSize: 122_880, metadata: {} },
          store: async (part, file) => {
            const target = join(dir, `${pages}-${part.index}.parquet`);
            await copyFile(file, target);
            files.push(target);
          },
        });
        // Rows [0,12) on pages 0,5,10; [12,24) on 10,15,20; [24,36) on 20,25,30,35; [36,40) on 35.
        // Requests in flight together may reach the proxy in any order.
        expect(requests.map(Number).sort((a, b) => a - b)).toEqual([0, 5, 10, 10, 15, 20, 20, 25, 30, 35, 35]);
        const ids = await withDuckDb(async (con) => (await con.runAndReadAll(`SELECT id FROM read_parquet([${files.map((f) => `'${f}'`).join(', ')}]) ORDER BY id`)).getRowObjectsJS());
        expect(ids.map((r) => Number(r['id']))).toHaveLength(40);
        expect(new Set(ids.map((r) => Number(r['id']))).size).toBe(40);
      } finally {
        await client.close();
        await proxy.close();
      }
    });
  }
});
