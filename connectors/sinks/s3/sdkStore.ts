import { Readable } from 'node:stream';
import {
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  NoSuchKey,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
  type ServerSideEncryption,
  type StorageClass,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { ConditionFailed, S3ProbeError, type ObjectStore } from './objectStore.ts';

export interface SdkStoreOptions {
  bucket: string;
  client: S3ClientConfig;
  sse?: ServerSideEncryption;
  sseKmsKeyId?: string;
  storageClass?: StorageClass;
  partSize: number;
  queueSize: number;
}

export function sdkObjectStore(options: SdkStoreOptions): ObjectStore {
  const client = new S3Client(options.client);
  const Bucket = options.bucket;
  const objectParams = {
    ...(options.sse ? { ServerSideEncryption: options.sse } : {}),
    ...(options.sseKmsKeyId ? { SSEKMSKeyId: options.sseKmsKeyId } : {}),
    ...(options.storageClass ? { StorageClass: options.storageClass } : {}),
  };
  const getVersioned = async (key: string, signal?: AbortSignal): Promise<{ body: Uint8Array; etag: string } | undefined> => {
    try {
      const out = await client.send(new GetObjectCommand({ Bucket, Key: key }), { abortSignal: signal });
      return { body: out.Body ? await out.Body.transformToByteArray() : new Uint8Array(), etag: out.ETag ?? '' };
    } catch (error) {
      if (error instanceof NoSuchKey || (error as { name?: unknown }).name === 'NoSuchKey') return undefined;
      throw error;
    }
  };
  return {
    async upload(key, body, { contentType, signal }) {
      signal?.throwIfAborted();
      const upload = new Upload({
        client,
        params: { Bucket, Key: key, Body: Readable.from(body), ContentType: contentType, ...objectParams },
        partSize: options.partSize,
        queueSize: options.queueSize,
        // On failure lib-storage waits for every in-flight part, then aborts the multipart upload.
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
    },
    async put(key, body, contentType, condition) {
      const conditional = condition === undefined ? {} : 'ifAbsent' in condition ? { IfNoneMatch: '*' } : { IfMatch: condition.ifVersion };
      try {
        const out = await client.send(new PutObjectCommand({ Bucket, Key: key, Body: body, ContentType: contentType, ...objectParams, ...conditional }));
        return out.ETag ?? '';
      } catch (error) {
        const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
        if (condition !== undefined && (status === 412 || status === 409)) throw new ConditionFailed(key, error);
        throw error;
      }
    },
    async get(key, signal) {
      return (await getVersioned(key, signal))?.body;
    },
    getVersioned,
    async head(key, signal) {
      try {
        const out = await client.send(new HeadObjectCommand({ Bucket, Key: key }), { abortSignal: signal });
        return out.ContentLength ?? 0;
      } catch (error) {
        const e = error as { name?: unknown; $metadata?: { httpStatusCode?: number } };
        if (e.name === 'NotFound' || e.name === 'NoSuchKey' || e.$metadata?.httpStatusCode === 404) return undefined;
        throw error;
      }
    },
    async list(prefix, signal) {
      const keys: string[] = [];
      let token: string | undefined;
      do {
        const out = await client.send(new ListObjectsV2Command({ Bucket, Prefix: prefix, ContinuationToken: token }), { abortSignal: signal });
        for (const o of out.Contents ?? []) if (o.Key !== undefined) keys.push(o.Key);
        token = out.IsTruncated ? out.NextContinuationToken : undefined;
      } while (token !== undefined);
      return keys;
    },
    async delete(keys) {
      for (let i = 0; i < keys.length; i += 1000) {
        const chunk = keys.slice(i, i + 1000);
        const out = await client.send(
          new DeleteObjectsCommand({ Bucket, Delete: { Objects: chunk.map((Key) => ({ Key })), Quiet: true } }),
        );
        const failed = out.Errors ?? [];
        if (failed.length > 0) {
          throw new Error(`could not delete ${failed.length} object(s), first ${failed[0]?.Key}: ${failed[0]?.Message}`);
        }
      }
    },
    async probe(signal) {
      try {
        await client.config.credentials();
      } catch (error) {
        throw new S3ProbeError(
          'credentials',
          `no S3 credentials found (${(error as Error).message}): set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or the s3 block's profile or access_key_id`,
          error,
        );
      }
      try {
        await client.send(new HeadBucketCommand({ Bucket }), { abortSignal: signal });
      } catch (error) {
        const e = error as { name?: unknown; message?: unknown; $metadata?: { httpStatusCode?: number } };
        // 403: the bucket exists, the key only lacks s3:ListBucket, which writing does not need.
        if (e.$metadata?.httpStatusCode === 403) return;
        signal?.throwIfAborted();
        const why = e.$metadata?.httpStatusCode === 404 || e.name === 'NotFound' || e.name === 'NoSuchBucket' ? 'does not exist' : `did not answer (${String(e.message ?? e.name)})`;
        throw new S3ProbeError('bucket', `the bucket ${Bucket} ${why}`, error);
      }
    },
    close() {
      client.destroy();
    },
  };
}
