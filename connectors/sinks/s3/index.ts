import type { S3ClientConfig } from '@aws-sdk/client-s3';
import { defineSink, lazyStore } from '../../../src/kit/index.ts';
import { s3Config, type S3Config, s3Options } from './options.ts';
import { parseS3Url } from './url.ts';

export { s3Config, type S3Config, s3Options } from './options.ts';

/**
 * Amazon S3 or a compatible store: the store's calls only (GET, PUT with `If-None-Match` /
 * `If-Match`, multipart uploads, HEAD, LIST, DELETE). The commit is written once over them in
 * src/export: parts under their final keys, `_manifest.json` put conditionally as the commit point,
 * `_SUCCESS` after it (docs/running-jobs.md, "What a reader sees"). Multipart uploads a killed run left open are
 * not listed: an AbortIncompleteMultipartUpload lifecycle rule on the bucket reclaims them.
 */
export const s3 = defineSink({
  type: 's3',
  description: 'Amazon S3 or a compatible store, multipart uploads, manifest as the commit point.',
  paths: 's3://bucket/prefix',
  config: s3Config,
  options: { key: 's3', schema: s3Options },
  // Anything that starts like an S3 URL, so `S3://b` or `s3:/b` are told what is wrong with them.
  accepts: (url) => /^s3:/i.test(url),
  create: (config: S3Config) => {
    const location = parseS3Url(config.url)!;
    const url = `s3://${location.bucket}${location.prefix ? `/${location.prefix}` : ''}`;
    // The SDK loads with the first request, so validating or listing sinks never pays for it.
    return lazyStore(url, async () => (await import('./sdkStore.ts')).sdkObjectStore({
      location,
      client: clientConfig(config),
      sse: config.sse,
      sseKmsKeyId: config.sse_kms_key_id,
      storageClass: config.storage_class,
      partSize: config.part_size_mb * 1024 * 1024,
      queueSize: config.queue_size,
    }));
  },
});

/** The SDK client settings of an `s3` config (region, endpoint, profile, static credentials). */
export function clientConfig(config: S3Config): S3ClientConfig {
  return {
    ...(config.region ? { region: config.region } : {}),
    ...(config.endpoint ? { endpoint: config.endpoint } : {}),
    ...(config.profile ? { profile: config.profile } : {}),
    forcePathStyle: config.force_path_style,
    ...(config.access_key_id && config.secret_access_key
      ? {
          credentials: {
            accessKeyId: config.access_key_id,
            secretAccessKey: config.secret_access_key,
            ...(config.session_token ? { sessionToken: config.session_token } : {}),
          },
        }
      : // A named profile is that profile's credentials, whatever else the environment holds (the
        // default chain would also look at AWS_ACCESS_KEY_ID, warn, and may prefer it one day).
        config.profile
        ? { credentials: profileCredentials(config.profile) }
        : {}),
  };
}

/** Static credentials, as a provider resolves them. */
type Credentials = Exclude<NonNullable<S3ClientConfig['credentials']>, (...args: never[]) => unknown>;

/** The named profile's credential provider, loaded on first use: only an export to S3 loads the SDK. */
function profileCredentials(profile: string): NonNullable<S3ClientConfig['credentials']> {
  let provider: Promise<() => Promise<Credentials>> | undefined;
  return async () => {
    provider ??= import('@aws-sdk/credential-provider-ini').then(({ fromIni }) => fromIni({ profile }));
    return (await provider)();
  };
}

