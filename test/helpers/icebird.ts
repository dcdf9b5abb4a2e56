import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { icebergRead } from 'icebird';
import type { LocalGcs } from './gcs.ts';
import type { LocalS3 } from './s3.ts';

/**
 * Reads an Iceberg table with icebird (an independent Iceberg reader on npm, built on hyparquet):
 * the current snapshot's rows, as icebird decodes them. icebird fetches over HTTP(S) only, and
 * turns s3:// into https://<bucket>.s3.amazonaws.com; for the duration of the read, `fetch`
 * serves file:// URLs from disk, those S3 URLs from the local S3 server and gs:// URLs (which icebird
 * passes through as they are) from the GCS stand-in instead. Nothing else
 * about the reader is replaced. `metadataFileName` (under metadata/) is the one a catalog gave;
 * without it icebird follows the version hint.
 */
export async function icebirdRead(tableUrl: string, store?: LocalS3 | LocalGcs, metadataFileName?: string): Promise<Record<string, unknown>[]> {
  const original = globalThis.fetch;
  globalThis.fetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = String(input instanceof Request ? input.url : input);
    const range = new Headers(init?.headers).get('range');
    let body: Uint8Array | undefined;
    const gs = /^gs:\/\/([^/]+)\/(.*)$/.exec(url);
    if (url.startsWith('file://')) {
      body = await readFile(fileURLToPath(url)).then((b) => new Uint8Array(b), () => undefined);
    } else if (gs && store && 'violations' in store) {
      body = await store.get(gs[1]!, gs[2]!).catch(() => undefined);
    } else {
      const match = /^https:\/\/([^.]+)\.s3\.amazonaws\.com\/(.*)$/.exec(url);
      if (!match || !store || 'violations' in store) return original(input, init);
      body = await store.get(match[1]!, decodeURIComponent(match[2]!)).catch(() => undefined);
    }
    if (body === undefined) return new Response('not found', { status: 404, statusText: 'Not Found' });
    const r = range ? /^bytes=(\d+)-(\d*)$/.exec(range) : null;
    if (r) {
      const start = Number(r[1]);
      const end = r[2] === '' ? body.byteLength : Number(r[2]) + 1;
      return new Response(body.slice(start, end), { status: 206 });
    }
    return new Response(body, { status: 200 });
  }) as typeof fetch;
  try {
    return await icebergRead({ tableUrl, ...(metadataFileName === undefined ? {} : { metadataFileName }) });
  } finally {
    globalThis.fetch = original;
  }
}
