// What the examples of config/examples write to, started once per test file that runs them: a
// local S3 server, azurite as `npm run dev:azure` starts it, the GCS stand-in, and the Iceberg REST
// catalog stand-in; with the variables the example files read.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDevStore, type DevStore } from '../../scripts/devStore.ts';
import { startLocalGcs, type LocalGcs } from './gcs.ts';
import { type CatalogStandIn, startCatalogStandIn } from './icebergCatalog.ts';
import { startLocalS3, type LocalS3 } from './s3.ts';

export interface ExampleStores {
  /** A temporary folder for outputs and state, removed by `stop`. */
  readonly work: string;
  readonly s3: LocalS3;
  readonly azure: DevStore;
  readonly gcs: LocalGcs;
  readonly catalog: CatalogStandIn;
  /** The variables the example files read (`${S3_BUCKET}`, `${SLUICE_OUT}`, ...). */
  readonly env: Record<string, string>;
  stop(): Promise<void>;
}

export async function startExampleStores(prefix: string): Promise<ExampleStores> {
  const work = await mkdtemp(join(tmpdir(), prefix));
  const s3 = await startLocalS3();
  await s3.createBucket('examples');
  // Azure as a user tries it: `npm run dev:azure`'s store, and the variables it says to export
  // (the sink reads its credentials from the process environment).
  const azure = await startDevStore('azure', 0, 'examples');
  for (const [k, v] of Object.entries(azure.env)) process.env[k] = v;
  // GCS: the stand-in of Google's JSON API, found as Google's clients find an emulator (STORAGE_EMULATOR_HOST).
  const gcs = await startLocalGcs();
  await gcs.createBucket('examples');
  process.env.STORAGE_EMULATOR_HOST = gcs.endpoint;
  // The Iceberg REST catalog stand-in: every request and answer checked against the official OpenAPI document.
  const catalog = await startCatalogStandIn({ auth: { type: 'bearer', token: 'example-token' }, warehouses: { lake: 'lake' } });
  const env = {
    ICEBERG_CATALOG_URI: catalog.uri,
    ICEBERG_TOKEN: 'example-token',
    SLUICE_SAMPLE_ROWS: '3000',
    SLUICE_OUT: join(work, 'out'),
    SLUICE_DATA: join(work, 'docker'),
    S3_BUCKET: 'examples',
    S3_PREFIX: 'exports/events',
    S3_ENDPOINT: s3.endpoint,
    S3_PATH_STYLE: 'true',
    AWS_REGION: s3.region,
    GCS_BUCKET: 'examples',
    ...azure.env,
  };
  return {
    work,
    s3,
    azure,
    gcs,
    catalog,
    env,
    async stop() {
      await catalog.stop();
      await s3.stop();
      for (const k of Object.keys(azure.env)) delete process.env[k];
      await azure.server.stop();
      delete process.env.STORAGE_EMULATOR_HOST;
      await gcs.stop();
      await rm(work, { recursive: true, force: true });
    },
  };
}
