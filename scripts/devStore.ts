// `npm run dev:s3` / `npm run dev:azure`: a local S3 (fauxqs) or Azure Blob (azurite) server on
// 127.0.0.1 with a bucket or container made, to try the object-store examples without an account.
// It prints what to set in another shell and runs until Ctrl-C; what it holds lives in memory.
//   npm run dev:s3 [-- --port 4566 --bucket sluice-dev]
//   npm run dev:azure [-- --port 10000 --container sluice-dev]
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { BlobServiceClient, StorageSharedKeyCredential } from '@azure/storage-blob';
import { AZURITE_ACCOUNT, AZURITE_KEY, startAzuriteServer, startFauxqsServer, type RunningServer } from './localStores.ts';

/** The development credentials of each store: fauxqs takes any key, azurite its well-known one. */
const S3_KEY = { id: 'test', secret: 'test', region: 'us-east-1' };

export interface DevStore {
  readonly server: RunningServer;
  /** The variables to export in the shell that runs the example. */
  readonly env: Record<string, string>;
  /** The example job that writes there. */
  readonly example: string;
}

export async function startDevStore(kind: 's3' | 'azure', port: number, name: string): Promise<DevStore> {
  if (kind === 's3') {
    const server = await startFauxqsServer(port);
    const endpoint = `http://127.0.0.1:${server.port}`;
    const client = new S3Client({ endpoint, region: S3_KEY.region, forcePathStyle: true, credentials: { accessKeyId: S3_KEY.id, secretAccessKey: S3_KEY.secret } });
    await client.send(new CreateBucketCommand({ Bucket: name }));
    client.destroy();
    const env = { AWS_ACCESS_KEY_ID: S3_KEY.id, AWS_SECRET_ACCESS_KEY: S3_KEY.secret, AWS_REGION: S3_KEY.region, S3_BUCKET: name, S3_ENDPOINT: endpoint, S3_PATH_STYLE: 'true' };
    return { server, env, example: 'config/examples/s3.yaml' };
  }
  const server = await startAzuriteServer(port);
  const endpoint = `http://127.0.0.1:${server.port}/${AZURITE_ACCOUNT}`;
  const service = new BlobServiceClient(endpoint, new StorageSharedKeyCredential(AZURITE_ACCOUNT, AZURITE_KEY));
  await service.getContainerClient(name).createIfNotExists();
  const env = { AZURE_STORAGE_ACCOUNT: AZURITE_ACCOUNT, AZURE_STORAGE_KEY: AZURITE_KEY, AZURE_CONTAINER: name, AZURE_ENDPOINT: endpoint };
  return { server, env, example: 'config/examples/azure.yaml' };
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { port: { type: 'string' }, bucket: { type: 'string' }, container: { type: 'string' } },
  });
  const kind = positionals[0];
  if (kind !== 's3' && kind !== 'azure') throw new Error(`expected s3 or azure, got ${JSON.stringify(kind ?? '')}`);
  const port = Number(values.port ?? (kind === 's3' ? 4566 : 10000));
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port must be a port number, got ${JSON.stringify(values.port)}`);
  const name = (kind === 's3' ? values.bucket : values.container) ?? 'sluice-dev';
  const store = await startDevStore(kind, port, name);
  const exports = Object.entries(store.env).map(([k, v]) => `${k}=${v}`).join(' ');
  process.stdout.write(
    `${kind === 's3' ? 'local S3 (fauxqs)' : 'local Azure Blob (azurite)'} listening on 127.0.0.1:${store.server.port}, ${kind === 's3' ? 'bucket' : 'container'} ${name} made.\n` +
      `In another shell:\n  export ${exports}\n  npx sluice run ${store.example}\n` +
      'Ctrl-C stops it; what it holds is kept in memory only.\n',
  );
  const stop = (): void => {
    void store.server.stop().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((error: unknown) => {
    process.stderr.write(`dev store: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  });
}
