import { Readable } from 'node:stream';
import { BlobServiceClient, type ContainerClient, RestError, StorageSharedKeyCredential } from '@azure/storage-blob';
import { ConfigError, DestinationCheckError, type ObjectStore, PreconditionFailedError } from '../../../src/kit/index.ts';
import type { AzureConfig } from './options.ts';
import { type AzureLocation, blobName } from './url.ts';

const DELETES_IN_FLIGHT = 16;

const statusOf = (error: unknown): number | undefined => (error instanceof RestError ? error.statusCode : undefined);

/**
 * Blob Storage through @azure/storage-blob. A body held in memory is one Put Blob (conditional with
 * `If-None-Match: *` or `If-Match: <etag>`), a stream staged blocks committed by one Put Block List,
 * so a blob appears only whole.
 */
export function blobStore(location: AzureLocation, config: AzureConfig, url: string, env: NodeJS.ProcessEnv): ObjectStore {
  const container = containerClient(location, config, url, env);
  const block = config.block_size_mb * 1024 * 1024;
  const blob = (name: string) => container.getBlockBlobClient(blobName(location, name));
  const base = location.prefix === '' ? '' : `${location.prefix}/`;
  return {
    url,
    async get(name, signal) {
      try {
        const out = await blob(name).download(0, undefined, { abortSignal: signal });
        const chunks: Buffer[] = [];
        for await (const chunk of out.readableStreamBody ?? []) chunks.push(chunk as Buffer);
        return { body: new Uint8Array(Buffer.concat(chunks)), version: out.etag ?? '' };
      } catch (error) {
        if (statusOf(error) === 404) return undefined;
        throw error;
      }
    },
    async put(name, body, { condition, contentType, signal } = {}) {
      const conditions = condition === undefined ? undefined : 'ifAbsent' in condition ? { ifNoneMatch: '*' } : { ifMatch: condition.ifVersion };
      const headers = { blobHTTPHeaders: { blobContentType: contentType }, abortSignal: signal, conditions };
      try {
        if (body instanceof Uint8Array) {
          const out = await blob(name).upload(body, body.byteLength, headers);
          return { bytes: body.byteLength, version: out.etag ?? '' };
        }
        let bytes = 0;
        const counted = (async function* () {
          for await (const chunk of body) {
            bytes += chunk.byteLength;
            // The SDK's block buffers copy from Buffers; a view of the same bytes, not a copy.
            yield Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
          }
        })();
        const out = await blob(name).uploadStream(Readable.from(counted), block, config.concurrency, headers);
        signal?.throwIfAborted();
        return { bytes, version: out.etag ?? '' };
      } catch (error) {
        // 412: the version changed; 409: the blob exists (create-only) or another write holds it.
        if (condition !== undefined && (statusOf(error) === 412 || statusOf(error) === 409)) {
          throw new PreconditionFailedError(url, name, `${name} changed since it was read (another writer committed first)`, error);
        }
        throw error;
      }
    },
    async head(name, signal) {
      try {
        const props = await blob(name).getProperties({ abortSignal: signal });
        return { size: props.contentLength ?? 0, version: props.etag ?? '', modified: props.lastModified?.getTime() ?? 0 };
      } catch (error) {
        if (statusOf(error) === 404) return undefined;
        throw error;
      }
    },
    async list(prefix, signal) {
      const names: string[] = [];
      for await (const item of container.listBlobsFlat({ prefix: `${base}${prefix}`, abortSignal: signal })) names.push(item.name.slice(base.length));
      return names;
    },
    async delete(names, signal) {
      // Bounded: a sweep of thousands of parts must not open thousands of requests at once.
      for (let i = 0; i < names.length; i += DELETES_IN_FLIGHT) {
        await Promise.all(names.slice(i, i + DELETES_IN_FLIGHT).map((n) => blob(n).deleteIfExists({ abortSignal: signal })));
      }
    },
    async check(signal) {
      try {
        await container.getProperties({ abortSignal: signal });
      } catch (error) {
        signal?.throwIfAborted();
        const status = statusOf(error);
        if (status === 403) throw new ConfigError(`${url}: the Azure credentials were refused (403): check the account key, SAS or connection string`, { cause: error });
        const why = status === 404 ? 'does not exist' : `did not answer (${(error as Error).message})`;
        throw new DestinationCheckError(url, `the container ${location.container} ${why}`, error);
      }
    },
    async close() {},
  };
}

/** The container's client, from the block's credentials, else the environment's; a `ConfigError` naming what to set when there are none. */
function containerClient(location: AzureLocation, config: AzureConfig, url: string, env: NodeJS.ProcessEnv): ContainerClient {
  const connection = config.connection_string ?? (config.account_key || config.sas_token ? undefined : env.AZURE_STORAGE_CONNECTION_STRING);
  if (connection !== undefined) return BlobServiceClient.fromConnectionString(connection).getContainerClient(location.container);
  const account = config.account ?? location.account ?? env.AZURE_STORAGE_ACCOUNT;
  if (account === undefined) throw new ConfigError(`${url}: no Azure storage account: use an abfss:// URL, the azure block's account, or set AZURE_STORAGE_ACCOUNT (or AZURE_STORAGE_CONNECTION_STRING)`);
  const endpoint = (config.endpoint ?? `https://${account}.blob.core.windows.net`).replace(/\/+$/, '');
  const key = config.account_key ?? (config.sas_token ? undefined : env.AZURE_STORAGE_KEY);
  if (key !== undefined) return new BlobServiceClient(endpoint, new StorageSharedKeyCredential(account, key)).getContainerClient(location.container);
  const sas = config.sas_token ?? env.AZURE_STORAGE_SAS_TOKEN;
  if (sas !== undefined) return new BlobServiceClient(`${endpoint}?${sas.replace(/^\?/, '')}`).getContainerClient(location.container);
  throw new ConfigError(`${url}: no Azure credentials found: set AZURE_STORAGE_KEY (with the account), AZURE_STORAGE_SAS_TOKEN or AZURE_STORAGE_CONNECTION_STRING, or the azure block's account_key, sas_token or connection_string`);
}
