import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, ListMultipartUploadsCommand, S3Client } from '@aws-sdk/client-s3';
import { startFauxqsServer } from '../../scripts/localStores.ts';

export interface LocalS3 {
  /** http://127.0.0.1:<port> */
  readonly endpoint: string;
  /** The address the server bound: loopback. */
  readonly host: string;
  readonly region: string;
  readonly client: S3Client;
  createBucket(name: string): Promise<void>;
  /** Every key under `prefix`, sorted. */
  list(bucket: string, prefix?: string): Promise<string[]>;
  get(bucket: string, key: string): Promise<Uint8Array>;
  /** Downloads every object under `prefix` into `dir`, keeping the relative layout; returns the relative names. */
  download(bucket: string, prefix: string, dir: string): Promise<string[]>;
  stop(): Promise<void>;
}

/**
 * A local S3 (fauxqs) on 127.0.0.1 and an ephemeral port. Credentials come from the standard
 * chain, as in production: the environment variables are set here if the run has none. Its app is
 * started here rather than by `startFauxqs`, which listens on every interface.
 */
export async function startLocalS3(): Promise<LocalS3> {
  process.env.AWS_ACCESS_KEY_ID ??= 'test';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'test';
  process.env.AWS_REGION ??= 'us-east-1';
  const server = await startFauxqsServer(0);
  const endpoint = `http://127.0.0.1:${server.port}`;
  const region = process.env.AWS_REGION;
  const client = new S3Client({ endpoint, region });

  const list = async (bucket: string, prefix = ''): Promise<string[]> => {
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const out = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
      for (const o of out.Contents ?? []) if (o.Key) keys.push(o.Key);
      token = out.IsTruncated ? out.NextContinuationToken : undefined;
    } while (token);
    return keys.sort();
  };
  const get = async (bucket: string, key: string): Promise<Uint8Array> => {
    const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    return out.Body ? await out.Body.transformToByteArray() : new Uint8Array();
  };

  return {
    endpoint,
    host: '127.0.0.1',
    region,
    client,
    async createBucket(name) {
      await client.send(new CreateBucketCommand({ Bucket: name }));
    },
    list,
    get,
    async download(bucket, prefix, dir) {
      const base = prefix === '' ? '' : `${prefix.replace(/\/+$/, '')}/`;
      const names: string[] = [];
      for (const key of await list(bucket, base)) {
        const name = key.slice(base.length);
        const path = join(dir, ...name.split('/'));
        await mkdir(dirname(path), { recursive: true });
        await writeFile(path, await get(bucket, key));
        names.push(name);
      }
      return names;
    },
    async stop() {
      client.destroy();
      await server.stop();
    },
  };
}

/** Multipart uploads still open under `prefix` (fauxqs may not implement the listing: then undefined). */
export async function openMultipartUploads(s3: LocalS3, bucket: string, prefix: string): Promise<number | undefined> {
  try {
    const out = await s3.client.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: prefix }));
    return out.Uploads?.length ?? 0;
  } catch {
    return undefined;
  }
}
