// Content negotiation of the Accept header (RFC 9110 section 12.5.1), for the few media types an
// operation offers: each offered type takes the q of the most specific range that matches it
// (type/subtype, then type/*, then */*); the highest q above 0 wins. Ranges that do not parse
// (no '/', a q that is not a number in [0, 1]) are ignored, like their parameters other than q.

interface MediaRange {
  type: string;
  subtype: string;
  q: number;
}

function parseRanges(header: string): MediaRange[] {
  const out: MediaRange[] = [];
  for (const part of header.split(',')) {
    const [range, ...params] = part.split(';').map((s) => s.trim());
    const m = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+)\/([!#$%&'*+.^_`|~0-9A-Za-z-]+)$/.exec(range ?? '');
    if (m === null) continue;
    let q = 1;
    let valid = true;
    for (const p of params) {
      const eq = p.indexOf('=');
      if (eq < 0 || p.slice(0, eq).trim().toLowerCase() !== 'q') continue;
      const text = p.slice(eq + 1).trim();
      q = /^(0(\.\d{0,3})?|1(\.0{0,3})?)$/.test(text) ? Number(text) : Number.NaN;
      if (Number.isNaN(q)) valid = false;
    }
    if (valid) out.push({ type: m[1]!.toLowerCase(), subtype: m[2]!.toLowerCase(), q });
  }
  return out;
}

/**
 * The offered media type to answer with, or undefined when none is acceptable (406). `offered[0]`
 * is the default: it wins ties, except against a type named exactly (a client that names a
 * non-default type at the same q wants it: `application/json, application/x` answers x).
 * No Accept header (or an empty one) accepts anything.
 */
export function negotiate(header: string | undefined, offered: readonly string[]): string | undefined {
  if (header === undefined || header.trim() === '') return offered[0];
  const ranges = parseRanges(header);
  let best: { type: string; q: number; exact: boolean } | undefined;
  for (const media of offered) {
    const [type, subtype] = media.split('/') as [string, string];
    let match: { q: number; specificity: number } | undefined;
    for (const r of ranges) {
      const specificity = r.type === type && r.subtype === subtype ? 2 : r.type === type && r.subtype === '*' ? 1 : r.type === '*' && r.subtype === '*' ? 0 : -1;
      if (specificity < 0 || (match !== undefined && match.specificity >= specificity)) continue;
      match = { q: r.q, specificity };
    }
    if (match === undefined || match.q <= 0) continue;
    const exact = match.specificity === 2;
    if (best === undefined || match.q > best.q || (match.q === best.q && exact && (!best.exact || best.type === offered[0]))) best = { type: media, q: match.q, exact };
  }
  return best?.type;
}
