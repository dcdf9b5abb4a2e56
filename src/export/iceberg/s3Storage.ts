import { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import type { TableStorage } from './storage.ts';

export interface S3TableLocation {
  readonly bucket: string;
  /** Key prefix of the table, without a trailing slash ('' for the bucket root). */
  readonly prefix: string;
}

/**
 * A table under an S3 prefix. The commit point is a PUT with `If-None-Match: *`, which S3
 * (since 2024) and most compatible stores reject with 412 when the key exists.
 */
// Loaded on first use: the SDK is large, and importing the library must not load it for a job without S3.
const sdk = () => import('@aws-sdk/client-s3');

export function s3TableStorage(client: S3Client, location: S3TableLocation, options: { partSize?: number; queueSize?: number } = {}): TableStorage {
  const { bucket: Bucket } = location;
  const base = location.prefix === '' ? '' : `${location.prefix.replace(/\/+$/, '')}/`;
  const keyOf = (name: string) => `${base}${name}`;
  return {
    url: base === '' ? `s3://${Bucket}` : `s3://${Bucket}/${base.slice(0, -1)}`,
    async read(name, signal) {
      const { GetObjectCommand } = await sdk();
      try {
        const out = await client.send(new GetObjectCommand({ Bucket, Key: keyOf(name) }), { abortSignal: signal });
        return out.Body ? await out.Body.transformToByteArray() : new Uint8Array();
      } catch (error) {
        const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
        if (e.name === 'NoSuchKey' || e.$metadata?.httpStatusCode === 404) return undefined;
        throw error;
      }
    },
    async list(prefix, signal) {
      const { ListObjectsV2Command } = await sdk();
      const names: string[] = [];
      let token: string | undefined;
      do {
        const out = await client.send(new ListObjectsV2Command({ Bucket, Prefix: keyOf(prefix), ContinuationToken: token }), { abortSignal: signal });
        for (const o of out.Contents ?? []) if (o.Key !== undefined) names.push(o.Key.slice(base.length));
        token = out.IsTruncated ? out.NextContinuationToken : undefined;
      } while (token !== undefined);
      return names;
    },
    async createIfAbsent(name, body, signal) {
      const { PutObjectCommand } = await sdk();
      try {
        await client.send(new PutObjectCommand({ Bucket, Key: keyOf(name), Body: body, IfNoneMatch: '*', ContentType: 'application/json' }), { abortSignal: signal });
        return true;
      } catch (error) {
        const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
        if (e.name === 'PreconditionFailed' || e.$metadata?.httpStatusCode === 412) return false;
        throw error;
      }
    },
    async put(name, body, { contentType, signal } = {}) {
      const { PutObjectCommand } = await sdk();
      if (body instanceof Uint8Array) {
        await client.send(new PutObjectCommand({ Bucket, Key: keyOf(name), Body: body, ContentType: contentType }), { abortSignal: signal });
        return body.byteLength;
      }
      let bytes = 0;
      const counted = async function* () {
        for await (const chunk of body) {
          bytes += chunk.byteLength;
          yield chunk;
        }
      };
      const { Upload } = await import('@aws-sdk/lib-storage');
      const upload = new Upload({
        client,
        params: { Bucket, Key: keyOf(name), Body: Readable.from(counted()), ContentType: contentType },
        partSize: options.partSize ?? 8 * 1024 * 1024,
        queueSize: options.queueSize ?? 4,
        leavePartsOnError: false,
      });
      const onAbort = () => void upload.abort().catch(() => undefined);
      signal?.addEventListener('abort', onAbort, { once: true });
      try {
        await upload.done();
      } finally {
        signal?.removeEventListener('abort', onAbort);
      }
      signal?.throwIfAborted();
      return bytes;
    },
    async delete(names) {
      const { DeleteObjectsCommand } = await sdk();
      for (let i = 0; i < names.length; i += 1000) {
        const chunk = names.slice(i, i + 1000);
        await client.send(new DeleteObjectsCommand({ Bucket, Delete: { Objects: chunk.map((n) => ({ Key: keyOf(n) })), Quiet: true } }));
      }
    },
    async close() {},
  };
}
