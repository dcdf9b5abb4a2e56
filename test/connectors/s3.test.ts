import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { writeExport } from '../../src/export/index.ts';
import { parseS3Url } from '../../connectors/sinks/s3/url.ts';
import { openMultipartUploads, startLocalS3, type LocalS3 } from '../helpers/s3.ts';
import { numbered, numberedSchema } from './fixtures.ts';

let s3: LocalS3;
beforeAll(async () => {
  s3 = await startLocalS3();
  await s3.createBucket('s3-sink');
});
afterAll(async () => s3?.stop());

describe('s3 sink', () => {
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
      { format: 'csv', path: 's3://s3-sink/big', s3: s3opts },
    );
    expect(summary.files[0]!.bytes).toBeGreaterThan(5 * 1024 * 1024); // more than one 5 MiB part
    const head = await s3.client.send(new HeadObjectCommand({ Bucket: 's3-sink', Key: 'big/part-00000-big.csv' }));
    expect(head.ContentLength).toBe(summary.files[0]!.bytes);

    const controller = new AbortController();
    const run = writeExport(
      { schema: numberedSchema, batches: numbered(300_000, 20_000), meta: { executionId: 'cut' } },
      { format: 'csv', path: 's3://s3-sink/cut', s3: s3opts },
      { signal: controller.signal },
    );
    setTimeout(() => controller.abort(new Error('cut short')), 30);
    await expect(run).rejects.toThrow('cut short');
    expect(await s3.list('s3-sink', 'cut/')).toEqual([]);
    const open = await openMultipartUploads(s3, 's3-sink', 'cut/');
    if (open !== undefined) expect(open).toBe(0);
  });

  it('reports an unreachable endpoint as a DestinationError naming the URL', async () => {
    const run = writeExport(
      { schema: numberedSchema, batches: numbered(10, 10), meta: { executionId: 'x' } },
      { format: 'csv', path: 's3://s3-sink/nowhere', s3: { endpoint: 'http://127.0.0.1:1', region: 'us-east-1' } },
    );
    await expect(run).rejects.toThrow(/s3:\/\/s3-sink\/nowhere/);
  });
});
