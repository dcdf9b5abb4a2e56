import { Readable } from 'node:stream';
import {
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
  type ServerSideEncryption,
  type StorageClass,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { ConfigError, DestinationCheckError, type ObjectInfo, type ObjectStore, PreconditionFailedError, type PutOptions, type PutResult, type StoredObject } from '../../../src/kit/index.ts';
import { keyOf, type S3Location } from './url.ts';

export interface SdkStoreOptions {
  location: S3Location;
  client: S3ClientConfig;
  sse?: ServerSideEncryption | undefined;
  sseKmsKeyId?: string | undefined;
  storageClass?: StorageClass | undefined;
  partSize: number;
  queueSize: number;
}

type SdkError = { name?: unknown; message?: unknown; $metadata?: { httpStatusCode?: number } };
const statusOf = (error: unknown): number | undefined => (error as SdkError).$metadata?.httpStatusCode;
const missing = (error: unknown): boolean => ['NoSuchKey', 'NotFound'].includes(String((error as SdkError).name)) || statusOf(error) === 404;

/**
 * S3 through the AWS SDK: a body held in memory is one PUT (conditional with `If-None-Match: *` or
 * `If-Match: <etag>`), a stream a multipart upload (which appears only when complete).
 */
export function sdkObjectStore(options: SdkStoreOptions): ObjectStore {
  return new SdkObjectStore(options);
}

class SdkObjectStore implements ObjectStore {
  readonly url: string;
  readonly #options: SdkStoreOptions;
  readonly #client: S3Client;
  readonly #location: S3Location;
  readonly #bucket: string;
  /** The key prefix every name is under ('' or ending in '/'). */
  readonly #base: string;
  /** What every object is written with: encryption and storage class. */
  readonly #objectParams: { ServerSideEncryption?: ServerSideEncryption; SSEKMSKeyId?: string; StorageClass?: StorageClass };

  constructor(options: SdkStoreOptions) {
    const { location } = options;
    this.#options = options;
    this.#client = new S3Client(options.client);
    this.#location = location;
    this.#bucket = location.bucket;
    this.url = `s3://${location.bucket}${location.prefix ? `/${location.prefix}` : ''}`;
    this.#base = location.prefix === '' ? '' : `${location.prefix}/`;
    this.#objectParams = {
      ...(options.sse ? { ServerSideEncryption: options.sse } : {}),
      ...(options.sseKmsKeyId ? { SSEKMSKeyId: options.sseKmsKeyId } : {}),
      ...(options.storageClass ? { StorageClass: options.storageClass } : {}),
    };
  }

  async get(name: string, signal?: AbortSignal): Promise<StoredObject | undefined> {
    try {
      const out = await this.#client.send(new GetObjectCommand({ Bucket: this.#bucket, Key: this.#key(name) }), { abortSignal: signal });
      return { body: out.Body ? await out.Body.transformToByteArray() : new Uint8Array(), version: out.ETag ?? '' };
    } catch (error) {
      if (missing(error)) return undefined;
      throw error;
    }
  }

  async put(name: string, body: Uint8Array | AsyncIterable<Uint8Array>, { condition, contentType, signal }: PutOptions = {}): Promise<PutResult> {
    const Key = this.#key(name);
    if (!(body instanceof Uint8Array)) {
      if (condition !== undefined) body = await collect(body);
      else return this.#upload(Key, body, contentType, signal);
    }
    const conditional = condition === undefined ? {} : 'ifAbsent' in condition ? { IfNoneMatch: '*' } : { IfMatch: condition.ifVersion };
    try {
      const out = await this.#client.send(new PutObjectCommand({ Bucket: this.#bucket, Key, Body: body, ContentType: contentType, ...this.#objectParams, ...conditional }), { abortSignal: signal });
      return { bytes: body.byteLength, version: out.ETag ?? '' };
    } catch (error) {
      // 409: another conditional write to the key was in flight.
      const status = statusOf(error);
      if (condition !== undefined && (status === 412 || status === 409)) throw new PreconditionFailedError(this.url, name, `${name} changed since it was read (another writer committed first)`, error);
      throw error;
    }
  }

  async head(name: string, signal?: AbortSignal): Promise<ObjectInfo | undefined> {
    try {
      const out = await this.#client.send(new HeadObjectCommand({ Bucket: this.#bucket, Key: this.#key(name) }), { abortSignal: signal });
      return { size: out.ContentLength ?? 0, version: out.ETag ?? '', modified: out.LastModified?.getTime() ?? 0 };
    } catch (error) {
      if (missing(error)) return undefined;
      throw error;
    }
  }

  async list(prefix: string, signal?: AbortSignal): Promise<string[]> {
    const names: string[] = [];
    let token: string | undefined;
    do {
      const out = await this.#client.send(new ListObjectsV2Command({ Bucket: this.#bucket, Prefix: `${this.#base}${prefix}`, ContinuationToken: token }), { abortSignal: signal });
      for (const o of out.Contents ?? []) if (o.Key !== undefined) names.push(o.Key.slice(this.#base.length));
      token = out.IsTruncated ? out.NextContinuationToken : undefined;
    } while (token !== undefined);
    return names;
  }

  async delete(names: readonly string[], signal?: AbortSignal): Promise<void> {
    for (let i = 0; i < names.length; i += 1000) {
      const Objects = names.slice(i, i + 1000).map((n) => ({ Key: this.#key(n) }));
      const out = await this.#client.send(new DeleteObjectsCommand({ Bucket: this.#bucket, Delete: { Objects, Quiet: true } }), { abortSignal: signal });
      const failed = out.Errors ?? [];
      if (failed.length > 0) throw new Error(`could not delete ${failed.length} object(s), first ${failed[0]?.Key}: ${failed[0]?.Message}`);
    }
  }

  async check(signal?: AbortSignal): Promise<void> {
    try {
      await this.#client.config.credentials();
    } catch (error) {
      throw new ConfigError(
        `${this.url}: no S3 credentials found (${(error as Error).message}): set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or the s3 block's profile or access_key_id`,
        { cause: error },
      );
    }
    try {
      await this.#client.send(new HeadBucketCommand({ Bucket: this.#bucket }), { abortSignal: signal });
    } catch (error) {
      // 403: the bucket exists, the key only lacks s3:ListBucket, which writing does not need.
      if (statusOf(error) === 403) return;
      signal?.throwIfAborted();
      const e = error as SdkError;
      const why = statusOf(error) === 404 || e.name === 'NotFound' || e.name === 'NoSuchBucket' ? 'does not exist' : `did not answer (${String(e.message ?? e.name)})`;
      throw new DestinationCheckError(this.url, `the bucket ${this.#bucket} ${why}`, error);
    }
  }

  async close(): Promise<void> {
    this.#client.destroy();
  }

  #key(name: string): string {
    return keyOf(this.#location, name);
  }

  /** A stream as one multipart upload, which appears only when complete and is aborted on `signal`. */
  async #upload(Key: string, body: AsyncIterable<Uint8Array>, contentType: string | undefined, signal: AbortSignal | undefined): Promise<PutResult> {
    signal?.throwIfAborted();
    let bytes = 0;
    const counted = async function* () {
      for await (const chunk of body) {
        bytes += chunk.byteLength;
        yield chunk;
      }
    };
    const upload = new Upload({
      client: this.#client,
      params: { Bucket: this.#bucket, Key, Body: Readable.from(counted()), ContentType: contentType, ...this.#objectParams },
      partSize: this.#options.partSize,
      queueSize: this.#options.queueSize,
      // On failure lib-storage waits for every in-flight part, then aborts the multipart upload.
      leavePartsOnError: false,
    });
    const onAbort = () => void upload.abort().catch(() => undefined);
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const out = await upload.done();
      signal?.throwIfAborted();
      return { bytes, version: ('ETag' in out ? out.ETag : undefined) ?? '' };
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }
}

async function collect(body: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return Buffer.concat(chunks);
}
