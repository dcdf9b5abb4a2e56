import type { ParameterValue, QueryParameter } from '../protocol/index.ts';
import { MESSAGES } from '../protocol/index.ts';
import { sqlString } from './sql.ts';

/** A parameter value that does not fit its declaration: the message names the parameter and the value. */
export class ParameterError extends Error {
  override readonly name = 'ParameterError';
}

const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;

/** Names referred to as `{{name}}` in a query's SQL, in order of first use. */
export function placeholders(sql: string): string[] {
  return [...new Set([...sql.matchAll(PLACEHOLDER)].map((m) => m[1] as string))];
}

/**
 * Checks a query's declared parameters against its SQL (create and update): unique keys, every
 * placeholder declared, enum options present, each default valid for its type.
 */
export function checkDeclarations(sql: string, params: readonly QueryParameter[]): void {
  const keys = new Set<string>();
  for (const p of params) {
    if (keys.has(p.key)) throw new ParameterError(`parameters: "${p.key}" is declared twice`);
    keys.add(p.key);
    if (p.type === 'enum' && (p.enum_options === undefined || p.enum_options.length === 0)) {
      throw new ParameterError(`parameters: the enum parameter "${p.key}" needs enumOptions`);
    }
    if (p.type !== 'enum' && p.enum_options !== undefined) {
      throw new ParameterError(`parameters: enumOptions is only for enum parameters, not "${p.key}" of type ${p.type}`);
    }
    canonicalValue(p, p.value, 'default value of parameter');
  }
  const undeclared = placeholders(sql).filter((name) => !keys.has(name));
  if (undeclared.length > 0) {
    throw new ParameterError(`query_sql refers to undeclared parameters (${undeclared.join(', ')}); declare them in parameters`);
  }
}

/**
 * The values an execution runs with: the given ones (checked and made canonical), defaults for the
 * others. Unknown names are refused with protocol.md's message.
 */
export function resolveParameters(
  declared: readonly QueryParameter[],
  given: Record<string, ParameterValue>,
): Record<string, string> {
  const unknown = Object.keys(given).filter((k) => !declared.some((p) => p.key === k));
  if (unknown.length > 0) throw new ParameterError(MESSAGES.unknownParameters(unknown));
  const out: Record<string, string> = {};
  for (const p of declared) out[p.key] = canonicalValue(p, given[p.key] ?? p.value, 'parameter');
  return out;
}

/** The query's SQL with every `{{name}}` replaced by a typed SQL literal of its (canonical) value. */
export function substitute(sql: string, declared: readonly QueryParameter[], values: Record<string, string>): string {
  return sql.replace(PLACEHOLDER, (_m, name: string) => {
    const p = declared.find((d) => d.key === name);
    const value = values[name];
    if (p === undefined || value === undefined) throw new ParameterError(`query_sql refers to the undeclared parameter "${name}"`);
    return literal(p.type, value);
  });
}

/** A canonical value as an SQL literal: quoted and escaped text, a checked number, a TIMESTAMP. */
export function literal(type: QueryParameter['type'], value: string): string {
  switch (type) {
    case 'number':
      // Parenthesised when negative: `1-{{n}}` with n = -5 must not become the comment `1--5`.
      return value.startsWith('-') ? `(${value})` : value;
    case 'datetime':
      return `TIMESTAMP ${sqlString(value)}`;
    case 'text':
    case 'enum':
      return sqlString(value);
  }
}

const NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/** Validates a value for its declared type and returns it in the one spelling executions store. */
export function canonicalValue(p: QueryParameter, value: ParameterValue, what: string): string {
  const bad = (expected: string) =>
    new ParameterError(`${what} "${p.key}": expected ${expected}, got ${JSON.stringify(value)}`);
  switch (p.type) {
    case 'text': {
      if (typeof value === 'boolean') throw bad('text');
      const text = String(value);
      if (text.includes('\u0000')) throw bad('text without NUL characters');
      return text;
    }
    case 'number': {
      if (typeof value === 'number') {
        if (!Number.isFinite(value)) throw bad('a finite number');
        return String(value);
      }
      if (typeof value !== 'string' || !NUMBER.test(value.trim())) throw bad('a number');
      const text = value.trim().replace(/^\+/, '');
      const n = Number(text);
      if (!Number.isFinite(n)) throw bad('a finite number');
      // "5", "5.0" and 5 are the same value; digits beyond a double's precision are kept as written.
      const mantissa = (text.split(/[eE]/)[0] ?? '').replace(/[-.]/g, '').replace(/^0+/, '');
      return mantissa.length <= 15 ? String(n) : text;
    }
    case 'datetime': {
      if (typeof value !== 'string') throw bad('a datetime such as "2026-11-20 10:15:30"');
      const dt = canonicalDatetime(value.trim());
      if (dt === undefined) throw bad('a datetime such as "2026-11-20 10:15:30" (YYYY-MM-DD[ HH:MM[:SS[.ffffff]]][Z|±HH:MM])');
      return dt;
    }
    case 'enum': {
      const options = p.enum_options ?? [];
      if (typeof value !== 'string' || !options.includes(value)) throw bad(`one of ${options.map((o) => JSON.stringify(o)).join(', ')}`);
      return value;
    }
  }
}

const DATETIME = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?)?(?:\s*(Z|UTC|[+-]\d{2}:?\d{2}))?$/i;

/** `YYYY-MM-DD HH:MM:SS[.ffffff]` in UTC, or undefined when the text is no valid datetime. */
export function canonicalDatetime(text: string): string | undefined {
  const m = DATETIME.exec(text);
  if (m === null) return undefined;
  const [y, mo, d, h = 0, mi = 0, s = 0] = [m[1], m[2], m[3], m[4], m[5], m[6]].map((x) => (x === undefined ? undefined : Number(x)));
  if (y === undefined || mo === undefined || d === undefined) return undefined;
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59) return undefined;
  let ms = Date.UTC(y, mo - 1, d, h, mi, s);
  const check = new Date(ms);
  if (check.getUTCDate() !== d || check.getUTCMonth() !== mo - 1) return undefined; // 2026-02-30
  const zone = m[8]?.toUpperCase();
  if (zone !== undefined && zone !== 'Z' && zone !== 'UTC') {
    const sign = zone.startsWith('-') ? -1 : 1;
    const digits = zone.slice(1).replace(':', '');
    const offH = Number(digits.slice(0, 2));
    const offM = Number(digits.slice(2));
    if (offH > 23 || offM > 59) return undefined;
    ms -= sign * (offH * 60 + offM) * 60_000;
  }
  const iso = new Date(ms).toISOString(); // YYYY-MM-DDTHH:MM:SS.000Z
  const fraction = m[7] === undefined ? '' : m[7].padEnd(6, '0').replace(/0+$/, '');
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}${fraction === '' ? '' : `.${fraction}`}`;
}
