/**
 * Where a contract's `quarantine` checks set rows aside: beside each output, at its path with
 * `_quarantine` appended (`out/orders` -> `out/orders_quarantine`, `s3://b/orders` ->
 * `s3://b/orders_quarantine`), in the output's format, sink options and mode, committed the way
 * the output is, on every run, so a replace output's quarantine always holds the bad rows of the
 * result the output holds. Each quarantined row is the result's row plus why it was set aside.
 */
export const QUARANTINE_SUFFIX = '_quarantine';

/** Why the quarantine of an output at `path` has no place beside it (undefined: it has). */
export function quarantinePathProblem(path: string): string | undefined {
  if (path === '-') return 'standard output has no place beside it for the quarantined rows: write this output to a directory or bucket';
  if (/^[a-z][a-z0-9+.-]*:\/\/[^/]+\/*$/i.test(path)) return 'an output at the root of a bucket or container has no sibling for its quarantine: write it under a prefix (s3://bucket/orders)';
  return undefined;
}

/** The path of an output's quarantine. */
export function quarantinePath(path: string): string {
  return `${path.replace(/\/+$/, '')}${QUARANTINE_SUFFIX}`;
}
