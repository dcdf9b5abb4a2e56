import { defineSink, lazyStore } from '../../../src/kit/index.ts';
import { gcsConfig, type GcsConfig, gcsOptions } from './options.ts';
import { parseGcsUrl } from './url.ts';

export { gcsConfig, type GcsConfig, gcsOptions } from './options.ts';

/**
 * Google Cloud Storage through its JSON API: the service's calls only (GET, uploads conditional on
 * `ifGenerationMatch` (0: create-only, else the generation read), resumable uploads finalised whole,
 * metadata GET, LIST, DELETE). The commit is written once over them in src/export, as for S3:
 * parts under their final names, `_manifest.json` put conditionally as the commit point.
 * Credentials: application default credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud's, the
 * metadata server's for workload identity), or the block's `key_file`.
 */
export const gcs = defineSink({
  type: 'gcs',
  description: 'Google Cloud Storage (JSON API), resumable uploads, manifest as the commit point.',
  paths: 'gs://bucket/prefix',
  config: gcsConfig,
  options: { key: 'gcs', schema: gcsOptions },
  // Anything that starts like a GCS URL, so a slip such as `gs:/b` or `GS://b` is told what is wrong with it.
  accepts: (url) => /^gs:/i.test(url),
  create: (config: GcsConfig) => {
    const location = parseGcsUrl(config.url)!;
    const url = `gs://${location.bucket}${location.prefix ? `/${location.prefix}` : ''}`;
    // google-auth-library loads with the first request, so validating or listing sinks never pays for it.
    return lazyStore(url, async () => (await import('./jsonStore.ts')).jsonStore(location, config, url, process.env));
  },
});
