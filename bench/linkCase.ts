// The official TypeScript client of the real service reading a whole result, for bench/link.ts, in
// a process of its own (it holds every row in memory, as it does for its users). Unmodified: one
// fetch shim points its base URL at ours and renames the key header, as a user would; its fetch
// asks for compression (`Accept-Encoding: gzip, deflate`) as it always does.
import { createRequire } from 'node:module';

export interface OfficialInput {
  readonly url: string;
  readonly key: string;
  readonly executionId: string;
}

const REAL_BASE = 'https://api.dune.com/api';

export async function officialCase(input: OfficialInput): Promise<void> {
  const require = createRequire(import.meta.url);
  type Page = { result?: { rows: unknown[] }; next_uri?: string };
  // `_fetchEntireResult` is the client's own paging (getLastExecutionResults reads a result with it):
  // it follows next_uri page after page, concatenating the rows.
  const sdk = require('@duneanalytics/client-sdk') as {
    DuneClient: new (key: string) => { exec: { getExecutionResults(id: string): Promise<Page>; _fetchEntireResult(first: Page): Promise<Page> } };
  };
  const realFetch = globalThis.fetch;
  globalThis.fetch = (resource: string | URL | Request, init?: RequestInit) => {
    const headers = new Headers(init?.headers);
    const key = headers.get('x-dune-api-key');
    headers.delete('x-dune-api-key');
    if (key !== null) headers.set('x-service-api-key', key);
    return realFetch(String(resource).replace(REAL_BASE, input.url), { ...init, headers });
  };
  const client = new sdk.DuneClient(input.key);
  const t = performance.now();
  const res = await client.exec._fetchEntireResult(await client.exec.getExecutionResults(input.executionId));
  const ms = performance.now() - t;
  console.log(JSON.stringify({ ms, rows: res.result?.rows.length ?? 0 }));
}
