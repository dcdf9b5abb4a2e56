// Trino's type names, as written after AS in a cast, -> DuckDB's. DuckDB already reads most
// of them (varchar, bigint, double, decimal(p, s), date, boolean, json); these differ.
import type { SqlToken } from '../sandbox/sqlTokens.ts';

const SIMPLE = new Map<string, string>([
  ['varbinary', 'BLOB'],
  ['real', 'REAL'],
  ['double', 'DOUBLE'],
  ['int', 'INTEGER'],
  ['integer', 'INTEGER'],
  ['ipaddress', 'VARCHAR'],
]);

/** The DuckDB spelling of the Trino type in `tokens`, or undefined to leave it as written. */
export function translateType(tokens: SqlToken[]): string | undefined {
  const reader = { tokens, at: 0 };
  const out = readType(reader);
  return out !== undefined && reader.at === tokens.length ? out : undefined;
}

interface Reader {
  tokens: SqlToken[];
  at: number;
}

function word(r: Reader, value?: string): string | undefined {
  const t = r.tokens[r.at];
  if (t === undefined || (t.kind !== 'word' && t.kind !== 'quoted')) return undefined;
  if (value !== undefined && t.value !== value) return undefined;
  r.at += 1;
  return t.kind === 'quoted' ? `"${t.value.replaceAll('"', '""')}"` : t.value;
}

function punct(r: Reader, value: string): boolean {
  const t = r.tokens[r.at];
  if (t?.kind !== 'punct' || t.value !== value) return false;
  r.at += 1;
  return true;
}

/** `(p)` or `(p, s)` as written, or '' when absent. */
function params(r: Reader): string | undefined {
  if (!punct(r, '(')) return '';
  const nums: string[] = [];
  for (;;) {
    const n = word(r);
    if (n === undefined) return undefined;
    nums.push(n);
    if (punct(r, ')')) return `(${nums.join(', ')})`;
    if (!punct(r, ',')) return undefined;
  }
}

function readType(r: Reader): string | undefined {
  const name = word(r);
  if (name === undefined) return undefined;
  switch (name) {
    case 'array': {
      if (!punct(r, '(')) return undefined;
      const inner = readType(r);
      return inner !== undefined && punct(r, ')') ? `${inner}[]` : undefined;
    }
    case 'map': {
      if (!punct(r, '(')) return undefined;
      const k = readType(r);
      if (k === undefined || !punct(r, ',')) return undefined;
      const v = readType(r);
      return v !== undefined && punct(r, ')') ? `MAP(${k}, ${v})` : undefined;
    }
    case 'row':
      return readRow(r);
    case 'timestamp':
    case 'time':
      return readTemporal(r, name);
    case 'interval': {
      // interval day to second / year to month
      const from = word(r);
      if (from === undefined || word(r, 'to') === undefined || word(r) === undefined) return undefined;
      return from === 'year' ? 'interval_year_to_month' : 'INTERVAL';
    }
    default: {
      const p = params(r);
      if (p === undefined) return undefined;
      const simple = SIMPLE.get(name);
      if (simple !== undefined) return simple;
      return `${name.toUpperCase()}${p}`;
    }
  }
}

function readRow(r: Reader): string | undefined {
  if (!punct(r, '(')) return undefined;
  const fields: string[] = [];
  for (;;) {
    const field = word(r);
    if (field === undefined) return undefined;
    const type = readType(r);
    if (type === undefined) return undefined;
    fields.push(`${field} ${type}`);
    if (punct(r, ')')) return `STRUCT(${fields.join(', ')})`;
    if (!punct(r, ',')) return undefined;
  }
}

function readTemporal(r: Reader, name: string): string | undefined {
  if (params(r) === undefined) return undefined;
  if (word(r, 'with') !== undefined) {
    if (word(r, 'time') === undefined || word(r, 'zone') === undefined) return undefined;
    return name === 'timestamp' ? 'TIMESTAMPTZ' : 'TIMETZ';
  }
  if (word(r, 'without') !== undefined) {
    if (word(r, 'time') === undefined || word(r, 'zone') === undefined) return undefined;
  }
  return name === 'timestamp' ? 'TIMESTAMP' : 'TIME';
}
