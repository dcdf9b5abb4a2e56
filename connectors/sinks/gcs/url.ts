export interface GcsLocation {
  readonly bucket: string;
  /** Object name prefix without leading or trailing slash; '' for the bucket root. */
  readonly prefix: string;
}

// Bucket names: 3-63 lowercase letters, digits, hyphens and underscores (dotted names up to 222, each
// dot-separated part at most 63), a letter or digit at each end; never starting with "goog".
const GCS_URL = /^gs:\/\/([a-z0-9][a-z0-9._-]{1,220}[a-z0-9])(?:\/(.*))?$/;

/** Parses `gs://bucket/prefix`; undefined when it is not one. */
export function parseGcsUrl(url: string): GcsLocation | undefined {
  const match = GCS_URL.exec(url);
  if (!match) return undefined;
  const bucket = match[1]!;
  const parts = bucket.split('.');
  if (bucket.startsWith('goog') || parts.some((p) => p.length === 0 || p.length > 63) || (parts.length === 1 && bucket.length > 63)) return undefined;
  const prefix = (match[2] ?? '').replace(/^\/+|\/+$/g, '');
  if (prefix.split('/').some((segment) => segment === '.' || segment === '..')) return undefined;
  return { bucket, prefix };
}

export function objectName(location: GcsLocation, name: string): string {
  return location.prefix === '' ? name : `${location.prefix}/${name}`;
}
