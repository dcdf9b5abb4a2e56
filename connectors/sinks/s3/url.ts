export interface S3Location {
  readonly bucket: string;
  /** Key prefix without leading or trailing slash; '' for the bucket root. */
  readonly prefix: string;
}

// Bucket naming rules (3-63 chars, lowercase letters, digits, dots, hyphens, alnum at both ends).
const S3_URL = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/;

/** Parses `s3://bucket/prefix`; undefined when the URL is not one. */
export function parseS3Url(url: string): S3Location | undefined {
  const match = S3_URL.exec(url);
  if (!match) return undefined;
  const prefix = (match[2] ?? '').replace(/^\/+|\/+$/g, '');
  if (prefix.split('/').some((segment) => segment === '.' || segment === '..')) return undefined;
  return { bucket: match[1]!, prefix };
}

export function keyOf(location: S3Location, name: string): string {
  return location.prefix === '' ? name : `${location.prefix}/${name}`;
}
