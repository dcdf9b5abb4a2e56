import { spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { BlobServiceClient, StorageSharedKeyCredential } from '@azure/storage-blob';

/** Azurite's well-known development account (documented by Microsoft; not a secret). */
const ACCOUNT = 'devstoreaccount1';
const KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

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
  const main = join(dirname(createRequire(import.meta.url).resolve('azurite/package.json')), 'dist', 'src', 'blob', 'main.js');
  const child = spawn(process.execPath, [main, '--blobHost', '127.0.0.1', '--blobPort', '0', '--inMemoryPersistence', '--skipApiVersionCheck', '--disableTelemetry', '--loose'], { stdio: ['ignore', 'pipe', 'pipe'] });
  // A test process that dies without its afterAll (a crash, a timeout) takes azurite with it.
  const orphaned = (): void => void child.kill();
  process.once('exit', orphaned);
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const match = /successfully listens on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (match) resolve(Number(match[1]));
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`azurite exited with ${code}: ${out}`)));
  });
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
    async stop() {
      process.off('exit', orphaned);
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
