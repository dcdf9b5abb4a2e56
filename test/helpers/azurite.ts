import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { AZURITE_ACCOUNT, AZURITE_KEY, startAzuriteServer } from '../../scripts/localStores.ts';
import { BlobServiceClient, StorageSharedKeyCredential } from '@azure/storage-blob';

const ACCOUNT = AZURITE_ACCOUNT;
const KEY = AZURITE_KEY;

export interface LocalAzure {
  /** http://127.0.0.1:<port>/devstoreaccount1: the `azure` block's endpoint. */
  readonly endpoint: string;
  readonly account: string;
  readonly key: string;
  readonly connectionString: string;
  /** The `azure` block of an output here, credentials included (as `${AZURE_STORAGE_KEY}` would give them). */
  readonly options: { account: string; endpoint: string; account_key: string };
  createContainer(name: string): Promise<void>;
  /** Every blob name under `prefix`, sorted. */
  list(container: string, prefix?: string): Promise<string[]>;
  get(container: string, name: string): Promise<Uint8Array>;
  /** Downloads every blob under `prefix` into `dir`, keeping the relative layout; returns the relative names. */
  download(container: string, prefix: string, dir: string): Promise<string[]>;
  stop(): Promise<void>;
}

/**
 * Azurite's Blob service (npm, pure Node) in a process of its own, on 127.0.0.1 and an ephemeral
 * port, in memory. Unlike the local S3, it enforces create-only and if-match writes (409 / 412).
 */
export async function startAzurite(): Promise<LocalAzure> {
  const server = await startAzuriteServer(0);
  const port = server.port;
  const endpoint = `http://127.0.0.1:${port}/${ACCOUNT}`;
  const service = new BlobServiceClient(endpoint, new StorageSharedKeyCredential(ACCOUNT, KEY));
  const list = async (container: string, prefix = ''): Promise<string[]> => {
    const names: string[] = [];
    for await (const item of service.getContainerClient(container).listBlobsFlat({ prefix })) names.push(item.name);
    return names.sort();
  };
  // One GET of the whole blob: `downloadToBuffer` reads the size first and then that many bytes, so a
  // blob replaced in between (a journal a running export rewrites) came back cut at the old size.
  const get = async (container: string, name: string): Promise<Uint8Array> => {
    const answer = await service.getContainerClient(container).getBlockBlobClient(name).download();
    const chunks: Buffer[] = [];
    for await (const chunk of answer.readableStreamBody ?? []) chunks.push(chunk as Buffer);
    return new Uint8Array(Buffer.concat(chunks));
  };
  return {
    endpoint,
    account: ACCOUNT,
    key: KEY,
    connectionString: `DefaultEndpointsProtocol=http;AccountName=${ACCOUNT};AccountKey=${KEY};BlobEndpoint=${endpoint};`,
    options: { account: ACCOUNT, endpoint, account_key: KEY },
    async createContainer(name) {
      await service.getContainerClient(name).createIfNotExists();
    },
    list,
    get,
    async download(container, prefix, dir) {
      const base = prefix === '' ? '' : `${prefix.replace(/\/+$/, '')}/`;
      const names: string[] = [];
      for (const name of await list(container, base)) {
        const relative = name.slice(base.length);
        const path = join(dir, ...relative.split('/'));
        await mkdir(dirname(path), { recursive: true });
        await writeFile(path, await get(container, name));
        names.push(relative);
      }
      return names;
    },
    stop: () => server.stop(),
  };
}
