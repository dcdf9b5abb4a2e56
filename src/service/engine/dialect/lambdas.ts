// Trino lambdas of several parameters over a map's entries or two zipped arrays
// (`(k, v) -> v > 1`) where DuckDB's list functions pass one element: the parameters become
// expressions of that element (`__e.key`, `__e.value`), found as tokens so strings, quoted
// names and field accesses (`t.k`) are left alone.
import { tokenize } from '../sandbox/sqlTokens.ts';

/** The element's name in a rewritten lambda: a name a user's query is unlikely to use. */
export const ELEMENT = '__e';

/**
 * The body of `lambda` (already DuckDB SQL) with its parameters replaced by `replacements`, in
 * parentheses; undefined when it is not a lambda of that many parameters.
 */
export function lambdaBody(lambda: string, replacements: string[]): string | undefined {
  const tokens = tokenize(lambda);
  const params: string[] = [];
  let i = 0;
  const punct = (v: string): boolean => tokens[i]?.kind === 'punct' && tokens[i]!.value === v;
  if (punct('(')) {
    i += 1;
    for (;;) {
      const t = tokens[i];
      if (t?.kind !== 'word') return undefined;
      params.push(t.value);
      i += 1;
      if (punct(')')) break;
      if (!punct(',')) return undefined;
      i += 1;
    }
    i += 1;
  } else if (tokens[0]?.kind === 'word') {
    params.push(tokens[0].value);
    i = 1;
  }
  if (params.length !== replacements.length || !punct('-') || tokens[i + 1]?.kind !== 'punct' || tokens[i + 1]!.value !== '>') return undefined;
  const bodyStart = tokens[i + 2]?.start;
  if (bodyStart === undefined) return undefined;
  let out = '';
  let from = bodyStart;
  for (let j = i + 2; j < tokens.length; j += 1) {
    const t = tokens[j]!;
    const k = t.kind === 'word' ? params.indexOf(t.value) : -1;
    const prev = tokens[j - 1];
    const next = tokens[j + 1];
    if (k < 0 || (prev?.kind === 'punct' && prev.value === '.') || (next?.kind === 'punct' && next.value === '(')) continue;
    out += lambda.slice(from, t.start) + replacements[k]!;
    from = t.end;
  }
  return `(${out}${lambda.slice(from)})`;
}
