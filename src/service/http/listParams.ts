import { HttpError } from './errors.ts';

const INT = /^(0|[1-9][0-9]{0,8})$/;

/**
 * `limit` (default `dflt`, at most `max`: more is lowered to it) and `offset` (default 0) of a
 * list route; any other parameter but `extra` (and `api_key`) is 400 naming it.
 */
export function listParams(url: URL, dflt: number, max: number, extra: readonly string[] = []): { limit: number; offset: number } {
  const known = ['limit', 'offset', ...extra];
  for (const k of url.searchParams.keys()) {
    if (!known.includes(k) && k !== 'api_key') throw new HttpError(400, `Bad Request: unknown parameter "${k}" (known: ${known.join(', ')})`);
  }
  const read = (name: string, fallback: number, min: number): number => {
    const v = url.searchParams.get(name);
    if (v === null) return fallback;
    if (!INT.test(v) || Number(v) < min) throw new HttpError(400, `Bad Request: ${name} must be an integer of at least ${min}, got "${v}"`);
    return Number(v);
  };
  return { limit: Math.min(read('limit', dflt, 1), max), offset: read('offset', 0, 0) };
}
