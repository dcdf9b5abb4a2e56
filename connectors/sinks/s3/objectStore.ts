import { Readable } from 'node:stream';
import {
  DeleteObjectsCommand,
  GetObjectCommand,
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

/** The few S3 calls the sink makes; everything else about the SDK stays out of the sink. */
export interface ObjectStore {
  /** Streams `body` through a multipart upload; the object appears only when complete. */
  upload(key: string, body: AsyncIterable<Uint8Array>, options: { contentType?: string; signal?: AbortSignal }): Promise<void>;
  /**
   * Replaces the object atomically; resolves to its ETag. `condition`: only if absent
   * (`If-None-Match: *`) or only while it has this ETag (`If-Match`); else `ConditionFailed`.
   */
  put(key: string, body: Uint8Array, contentType?: string, condition?: PutCondition): Promise<string>;
  get(key: string, signal?: AbortSignal): Promise<Uint8Array | undefined>;
  /** The object and its ETag, or undefined when it does not exist. */
  getVersioned(key: string, signal?: AbortSignal): Promise<{ body: Uint8Array; etag: string } | undefined>;
  /** The object's size, or undefined when it does not exist. */
  head(key: string, signal?: AbortSignal): Promise<number | undefined>;
  /** Every key that starts with `prefix`. */
  list(prefix: string, signal?: AbortSignal): Promise<string[]>;
  delete(keys: readonly string[]): Promise<void>;
  close(): void;
}

export type PutCondition = { readonly ifAbsent: true } | { readonly ifVersion: string };

/** A conditional PUT was refused (412, or 409 when another conditional write to the key was in flight). */
export class ConditionFailed extends Error {
  constructor(key: string, cause: unknown) {
    super(`${key} changed since it was read (another writer committed first)`, { cause });
  }
}

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
    close() {
      client.destroy();
    },
  };
}
