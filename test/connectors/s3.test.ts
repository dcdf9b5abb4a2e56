import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { writeExport } from '../../src/export/index.ts';
import { parseS3Url } from '../../connectors/sinks/s3/url.ts';
import { openMultipartUploads, startLocalS3, type LocalS3 } from '../helpers/s3.ts';
import { numbered, numberedSchema, resolved } from './fixtures.ts';

let s3: LocalS3;
beforeAll(async () => {
  s3 = await startLocalS3();
  await s3.createBucket('s3-sink');
});
afterAll(async () => s3?.stop());

describe('s3 sink', () => {
  it("runs against a local S3 that listens on loopback only", async () => {
    expect(s3.host).toBe('127.0.0.1');
    // Not on another interface of this machine, where there is one.
    const port = Number(new URL(s3.endpoint).port);
    const outside = Object.values(networkInterfaces()).flat().find((a) => a !== undefined && !a.internal && a.family === 'IPv4');
    if (outside !== undefined) {
      const reached = await new Promise<boolean>((done) => {
        const socket = connect({ host: outside.address, port, timeout: 2_000 }, () => done(true));
        socket.on('error', () => done(false)).on('timeout', () => done(false));
        socket.on('close', () => socket.destroy());
      }).finally(() => undefined);
      expect(reached).toBe(false);
    }
  });

  it('parses s3 URLs', () => {
    expect(parseS3Url('s3://my.bucket-1/a/b/')).toEqual({ bucket: 'my.bucket-1', prefix: 'a/b' });
    expect(parseS3Url('s3://bucket')).toEqual({ bucket: 'bucket', prefix: '' });
    expect(parseS3Url('s3://UPPER/x')).toBeUndefined();
    expect(parseS3Url('https://bucket/x')).toBeUndefined();
  });

  it('uploads large files in multipart parts, with the storage class, and aborts cleanly mid-upload', async () => {
    const s3opts = { endpoint: s3.endpoint, region: s3.region, part_size_mb: 5, storage_class: 'STANDARD_IA' };
    const summary = await writeExport(
      { schema: numberedSchema, batches: numbered(300_000, 20_000), meta: { executionId: 'big', totalRowCount: 300_000 } },
      resolved({ format: 'csv', path: 's3://s3-sink/big', s3: s3opts }),
    );
    expect(summary.files[0]!.bytes).toBeGreaterThan(5 * 1024 * 1024); // more than one 5 MiB part
    const head = await s3.client.send(new HeadObjectCommand({ Bucket: 's3-sink', Key: 'big/part-00000-big.csv' }));
    expect(head.ContentLength).toBe(summary.files[0]!.bytes);

    const controller = new AbortController();
    const run = writeExport(
      { schema: numberedSchema, batches: numbered(300_000, 20_000), meta: { executionId: 'cut' } },
      resolved({ format: 'csv', path: 's3://s3-sink/cut', s3: s3opts }),
      { signal: controller.signal },
    );
    setTimeout(() => controller.abort(new Error('cut short')), 30);
    await expect(run).rejects.toThrow('cut short');
    expect(await s3.list('s3-sink', 'cut/')).toEqual([]);
    const open = await openMultipartUploads(s3, 's3-sink', 'cut/');
    if (open !== undefined) expect(open).toBe(0);
  });

  it('re-exporting one execution with another layout withdraws the committed output before overwriting its objects', async () => {
    // Run 1 commits parts of 1000 rows; run 2 reads the same execution into parts of 500 rows,
    // overwrites part-00000 under the same key, then fails. The old manifest must not survive to
    // describe a part-00000 that no longer holds its rows: a failure leaves no committed output.
    const opts = { endpoint: s3.endpoint, region: s3.region };
    await writeExport(
      { schema: numberedSchema, batches: numbered(3_000, 500), meta: { executionId: 'relayout', totalRowCount: 3_000 } },
      resolved({ format: 'csv', path: 's3://s3-sink/relayout', max_rows_per_file: 1_000, s3: opts }),
    );
    expect(await s3.list('s3-sink', 'relayout/')).toContain('relayout/_SUCCESS');
    const failing = writeExport(
      { schema: numberedSchema, batches: numbered(3_000, 500, 1_500), meta: { executionId: 'relayout', totalRowCount: 3_000 } },
      resolved({ format: 'csv', path: 's3://s3-sink/relayout', max_rows_per_file: 500, s3: opts }),
    );
    await expect(failing).rejects.toThrow();
    const left = await s3.list('s3-sink', 'relayout/');
    expect(left).not.toContain('relayout/_SUCCESS');
    expect(left).not.toContain('relayout/_manifest.json');

    // The next successful run commits the new layout and sweeps what is left of the old one.
    const summary = await writeExport(
      { schema: numberedSchema, batches: numbered(3_000, 500), meta: { executionId: 'relayout', totalRowCount: 3_000 } },
      resolved({ format: 'csv', path: 's3://s3-sink/relayout', max_rows_per_file: 500, s3: opts }),
    );
    expect(summary.files).toHaveLength(6);
    expect((await s3.list('s3-sink', 'relayout/')).filter((k) => k.includes('part-'))).toHaveLength(6);
  });

  it('sends the encryption and storage class settings with every object, path-style, signed with the standard credential chain', async () => {
    // The local S3 ignores these headers, so a recording proxy in front of it checks what was sent.
    const seen: { method: string; url: string; headers: Record<string, string | string[] | undefined> }[] = [];
    const target = new URL(s3.endpoint);
    const proxy = createServer((req, res) => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers });
      const upstream = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (up) => {
        res.writeHead(up.statusCode!, up.headers);
        up.pipe(res);
      });
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const endpoint = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    try {
      const s3opts = { endpoint, region: s3.region, force_path_style: true, part_size_mb: 5, sse: 'AES256', storage_class: 'STANDARD_IA' };
      await writeExport(
        { schema: numberedSchema, batches: numbered(200_000, 20_000), meta: { executionId: 'enc', totalRowCount: 200_000 } },
        resolved({ format: 'csv', path: 's3://s3-sink/enc', s3: s3opts, max_rows_per_file: 150_000 }),
      );
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
    }
    // Object creations: PUT without partNumber (small objects, markers) and POST ?uploads (multipart).
    const creations = seen.filter((r) => (r.method === 'PUT' && !r.url.includes('partNumber=')) || (r.method === 'POST' && /[?&]uploads(=|&|$)/.test(r.url)));
    expect(creations.map((r) => r.url.split('?')[0])).toEqual(
      expect.arrayContaining(['/s3-sink/enc/part-00000-enc.csv', '/s3-sink/enc/part-00001-enc.csv', '/s3-sink/enc/_manifest.json', '/s3-sink/enc/_SUCCESS']),
    );
    for (const r of creations) {
      expect(r.headers['x-amz-server-side-encryption'], r.url).toBe('AES256');
      expect(r.headers['x-amz-storage-class'], r.url).toBe('STANDARD_IA');
    }
    // Credentials from the environment (AWS_ACCESS_KEY_ID), as the default chain finds them.
    expect(seen.every((r) => String(r.headers.authorization).includes(`Credential=${process.env.AWS_ACCESS_KEY_ID}/`))).toBe(true);
    expect(await s3.list('s3-sink', 'enc/')).toEqual(['enc/_SUCCESS', 'enc/_manifest.json', 'enc/part-00000-enc.csv', 'enc/part-00001-enc.csv']);
  });

  it('reports an unreachable endpoint as a DestinationError naming the URL', async () => {
    const run = writeExport(
      { schema: numberedSchema, batches: numbered(10, 10), meta: { executionId: 'x' } },
      resolved({ format: 'csv', path: 's3://s3-sink/nowhere', s3: { endpoint: 'http://127.0.0.1:1', region: 'us-east-1' } }),
    );
    await expect(run).rejects.toThrow(/s3:\/\/s3-sink\/nowhere/);
  });
});
