import { RecordBatchStreamWriter, type RecordBatch } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { compileJsonRowAppender, restartRowOffset } from '../../src/types/batch.ts';
import { canonicalDigits, canonicalUnscaled, formatUnscaled, normalizeDecimal, unscaledDigits } from '../../src/types/decimal.ts';
import { ColumnValueError, Misfit } from '../../src/types/errors.ts';
import { generated } from '../../src/types/generated.ts';
import { compileDecoder, compileRowDecoder, createBatchBuilder, parseType, type ColumnSpec, type DecodeOptions, type Row } from '../../src/types/index.ts';
import {
  canonicalDateDays,
  canonicalFracUnits,
  scanCanonicalTimestamp,
  type CanonicalTimestamp,
  parseDateDays,
  parseDateDaysGeneral,
  parseTimestamp,
  parseTimestampGeneral,
  timestampMillis,
  type TimestampParts,
} from '../../src/types/temporal.ts';
import { seeded } from '../helpers/seeded.ts';
import { SAMPLE_EVENTS_COLUMNS } from '../../src/service/engine/tables/sampleEvents.ts';

/**
 * The fast paths for the service's canonical text (fixed-position dates and timestamps, decimals
 * already at their scale, rows built as one literal, the fused JSON-to-Arrow appender) must give
 * exactly what the general paths give, value and error alike. Each is compared with its general
 * path over many generated strings that sit on and around the canonical forms.
 */


const rnd = seeded(20_261_125);
const int = (n: number): number => Math.floor(rnd() * n);
const pick = <T,>(xs: readonly T[]): T => xs[int(xs.length)]!;
const pad = (n: number, width: number): string => String(n).padStart(width, '0');
const digitRun = (length: number): string => Array.from({ length }, () => String(int(10))).join('');

/** Replace, drop or insert one char: the near misses of a canonical text. */
function mutate(s: string): string {
  const at = int(s.length + 1);
  const ch = pick(['0', '9', '-', ':', ' ', '.', 'T', 'Z', '+', 'x', '/', '(', '\u0660']);
  switch (int(3)) {
    case 0:
      return s.slice(0, at) + ch + s.slice(at + 1);
    case 1:
      return s.slice(0, at) + s.slice(at + 1);
    default:
      return s.slice(0, at) + ch + s.slice(at);
  }
}

function dateText(): string {
  const year = pick([() => pad(int(10_000), 4), () => pad(int(10_000), 4), () => String(10_000 + int(90_000)), () => `-${pad(int(10_000), 4)}`, () => String(int(1000)), () => `+${pad(int(100_000), 6)}`])();
  const month = pick([() => pad(1 + int(12), 2), () => pad(int(14), 2), () => String(1 + int(12))])();
  const day = pick([() => pad(1 + int(28), 2), () => pad(28 + int(5), 2), () => pad(int(33), 2), () => '29', () => '30', () => '31'])();
  const text = `${year}-${month}-${day}${rnd() < 0.05 ? ' (BC)' : ''}`;
  return rnd() < 0.25 ? mutate(text) : text;
}

function timestampText(): string {
  const clock = pick([
    () => `${pad(int(24), 2)}:${pad(int(60), 2)}:${pad(int(60), 2)}`,
    () => `${pad(int(26), 2)}:${pad(int(61), 2)}:${pad(int(61), 2)}`,
    () => '24:00:00',
    () => '23:59:59',
  ])();
  const frac = pick(['', '', `.${digitRun(3)}`, `.${digitRun(6)}`, `.${digitRun(6)}`, `.${digitRun(int(14))}`, '.000000', `.${digitRun(3)}000`, '.']);
  const zone = pick(['', ' UTC', ' UTC', 'UTC', 'Z', ' Z', ' utc', '+02:00', ' -00:00', ' +18:30', ' UTC ', ' GMT']);
  const text = `${dateText()}${pick([' ', ' ', 'T', 'x'])}${clock}${frac}${zone}`;
  return rnd() < 0.25 ? mutate(text) : text;
}

function decimalText(): string {
  const sign = pick(['', '', '', '-', '+']);
  const whole = pick([() => '0', () => String(1 + int(9)) + digitRun(int(16)), () => `0${digitRun(1 + int(3))}`, () => '', () => digitRun(int(20))])();
  const frac = pick([() => `.${digitRun(int(7))}`, () => '.0000', () => `.${digitRun(4)}`, () => '', () => `.${digitRun(int(12))}`])();
  const exponent = rnd() < 0.05 ? pick(['e3', 'E-2', 'e+1', 'e']) : '';
  const text = `${sign}${whole}${frac}${exponent}`;
  return rnd() < 0.15 ? mutate(text) : text;
}

function hexText(): string {
  const hex = '0123456789abcdefABCDEF';
  const body = Array.from({ length: pick([0, 2, 40, 64, int(70)]) }, () => hex[int(hex.length)]).join('');
  const text = `${pick(['0x', '0x', '0x', '0X', '', 'x'])}${body}`;
  return rnd() < 0.2 ? mutate(text) : text;
}

const BOUNDARY_DATES = ['2026-13-01', '2026-00-10', '2026-02-30', '2026-02-29', '2024-02-29', '2100-02-29', '2000-02-29', '0000-02-29', '0000-01-01', '9999-12-31', '2026-04-31', '2026-01-00', '10000-01-01', '-0001-12-31', '0044-03-15 (BC)', '+2026-01-01', '2026-1-01', '2026-01-1', '2026/01/01', '٢٠٢٦-01-01'];
const BOUNDARY_TIMESTAMPS = [
  '2026-01-01 24:00:00',
  '2026-01-01 24:00:00 UTC',
  '2026-01-01 23:60:00',
  '2026-01-01 23:59:60',
  '2026-02-30 10:00:00',
  '2026-13-01 10:00:00 UTC',
  '10000-01-01 00:00:00',
  '10000-01-01 00:00:00.000000 UTC',
  '0000-01-01 00:00:00 UTC',
  '2026-01-01 10:15:30.1234567890123 UTC',
  '2026-01-01 10:15:30.123456789012 UTC',
  '2026-01-01 10:15:30. UTC',
  '2026-01-01 10:15:30.123456 UTC+',
  '2026-01-01T10:15:30Z',
  '2026-01-01 10:15:30 (BC)',
  '2026-01-01 (BC) 10:15:30',
  '2026-01-01 10:15:30.123456+01:00',
];
const BOUNDARY_DECIMALS = ['-0.0000', '-0', '0', '0.0000', '-0.0001', '00.5000', '012.0000', '0012', '12345678901234.0000', '123456789012345.0000', '1234.567', '1234.56789', '1234.', '.5000', '+1.0000', '1e3', '-', '', '1.00001', '99999999999999.9999', '-99999999999999.9999'];
const DECIMAL_TYPES: [number, number][] = [
  [18, 4],
  [4, 4],
  [10, 0],
  [38, 10],
  [3, 1],
  [40, 2],
  [16, 1],
];

const N = 8000;

function outcome(fn: () => unknown): unknown {
  try {
    return { value: fn() };
  } catch (error) {
    return { error: error instanceof Error ? `${error.constructor.name}: ${error.message}` : String(error) };
  }
}

describe('canonical fast paths agree with the general parsers', () => {
  it('dates: fixed positions give the general parser\'s days, or leave the text to it', () => {
    const texts = [...BOUNDARY_DATES, ...Array.from({ length: N }, dateText)];
    let canonical = 0;
    for (const t of texts) {
      const fast = parseDateDays(t);
      const general = parseDateDaysGeneral(t);
      if (!Object.is(fast, general)) expect.fail(`${JSON.stringify(t)}: ${fast} !== ${general}`);
      if (t.length === 10 && !Number.isNaN(general)) canonical++;
    }
    // The generator hits the canonical form often, so the fast path is really exercised.
    expect(canonical).toBeGreaterThan(N / 10);
    expect(parseDateDays('2026-02-30')).toBeNaN();
    expect(parseDateDays('2024-02-29')).toBe(Date.UTC(2024, 1, 29) / 86_400_000);
  });

  it('timestamps: fixed positions give the general parser\'s parts, or leave the text to it', () => {
    const texts = [...BOUNDARY_TIMESTAMPS, ...Array.from({ length: N }, timestampText)];
    const a: TimestampParts = { seconds: 0, frac: '', zoned: false };
    const b: TimestampParts = { seconds: 0, frac: '', zoned: false };
    let accepted = 0;
    for (const t of texts) {
      const fast = parseTimestamp(t, a);
      const general = parseTimestampGeneral(t, b);
      if (fast !== general || (fast && (!Object.is(a.seconds, b.seconds) || a.frac !== b.frac || a.zoned !== b.zoned))) {
        expect.fail(`${JSON.stringify(t)}: ${fast} ${JSON.stringify(a)} vs ${general} ${JSON.stringify(b)}`);
      }
      if (general) accepted++;
    }
    expect(accepted).toBeGreaterThan(N / 10);
    expect(parseTimestamp('2026-01-01 24:00:00', a)).toBe(false);
  });

  it('decimals: canonical text is returned as is only when the general path gives the same text', () => {
    const texts = [...BOUNDARY_DECIMALS, ...Array.from({ length: N }, decimalText)];
    let canonical = 0;
    for (const [p, s] of DECIMAL_TYPES) {
      for (const t of texts) {
        const fast = outcome(() => normalizeDecimal(t, p, s));
        const general = outcome(() => formatUnscaled(unscaledDigits(t, p, s), s));
        expect(fast, `${JSON.stringify(t)} as decimal(${p}, ${s})`).toEqual(general);
        const unscaled = canonicalUnscaled(t, p, s);
        if (!Number.isNaN(unscaled)) {
          canonical++;
          expect(unscaled, `${JSON.stringify(t)} unscaled at ${s}`).toBe(Number(unscaledDigits(t, p, s)));
          expect(Object.is(unscaled, -0), t).toBe(false);
        }
      }
    }
    expect(canonical).toBeGreaterThan(N / 10);
    expect(canonicalDigits('-0.0000', 18, 4)).toBe(0);
    expect(normalizeDecimal('-0.0000', 18, 4)).toBe('0.0000');
    expect(normalizeDecimal('00.5000', 18, 4)).toBe('0.5000');
    expect(() => normalizeDecimal('123456789012345.0000', 18, 4)).toThrow(/more than 14 integer digits/);
  });

  it('read in place in a longer text (a page), the fixed-position readers give what they give for the text alone', () => {
    // The text sits between other chars, as a value sits in a page: `"...":"<text>","...`.
    const around = (t: string) => ({ s: `{"k":"${t}","z":"2026-01-01 00:00:00 UTC"}`, at: 6, end: 6 + t.length });
    for (const t of [...BOUNDARY_DATES, ...Array.from({ length: N / 2 }, dateText)]) {
      const { s, at } = around(t);
      if (t.length === 10) expect(Object.is(canonicalDateDays(s, at), canonicalDateDays(t)), t).toBe(true);
    }
    const alone: CanonicalTimestamp = { seconds: 0, fracAt: 0, fracLength: 0, zoned: false };
    const inPlace: CanonicalTimestamp = { seconds: 0, fracAt: 0, fracLength: 0, zoned: false };
    for (const t of [...BOUNDARY_TIMESTAMPS, ...Array.from({ length: N / 2 }, timestampText)]) {
      const { s, at, end } = around(t);
      const ok = scanCanonicalTimestamp(t, alone);
      expect(scanCanonicalTimestamp(s, inPlace, at, end), t).toBe(ok);
      if (ok) {
        expect({ ...inPlace, fracAt: inPlace.fracAt - at }, t).toEqual(alone);
        expect(canonicalFracUnits(s, inPlace, 6), t).toBe(canonicalFracUnits(t, alone, 6));
      }
    }
    for (const [p, sc] of DECIMAL_TYPES) {
      for (const t of [...BOUNDARY_DECIMALS, ...Array.from({ length: N / 4 }, decimalText)]) {
        const { s, at, end } = around(t);
        expect(Object.is(canonicalUnscaled(s, p, sc, at, end), canonicalUnscaled(t, p, sc)), `${t} as decimal(${p}, ${sc})`).toBe(true);
      }
    }
  });

  it('timestamp decoders: the fast path gives what the general parser gives, value and error', () => {
    const texts = [...BOUNDARY_TIMESTAMPS, ...Array.from({ length: N / 2 }, timestampText)];
    for (const type of ['timestamp(6) with time zone', 'timestamp(3) with time zone', 'timestamp(0)', 'timestamp(3)', 'timestamp(6)', 'timestamp(9)', 'timestamp(9) with time zone']) {
      for (const timestamps of ['auto', 'string'] as const) {
        const fast = compileDecoder(parseType(type), { timestamps });
        const general = referenceTimestampDecoder(type, timestamps);
        for (const t of texts) {
          const a = outcome(() => fast(t));
          const b = outcome(() => general(t));
          if (!sameOutcome(a, b)) expect.fail(`${type} ${timestamps} ${JSON.stringify(t)}: ${show(a)} vs ${show(b)}`);
        }
      }
    }
  });

  it('varbinary: exactly 0x-prefixed hex pairs decode, each to a Uint8Array of its own (the fused Arrow path below takes the same texts)', () => {
    const fast = compileDecoder(parseType('varbinary'));
    const reference = (v: unknown): unknown => {
      if (v == null) return null;
      if (typeof v !== 'string' || !/^0x(?:[0-9a-fA-F]{2})*$/.test(v)) throw new Misfit(v, 'is not 0x-prefixed hex (varbinary)');
      return new Uint8Array(Buffer.from(v.slice(2), 'hex'));
    };
    for (const v of ['0x', '0x0', '0xg0', '0xAbCd', '0x\u00e9e', ' 0x00', '0x00\n', 5, null, ...Array.from({ length: N }, hexText)]) {
      const a = outcome(() => fast(v));
      const b = outcome(() => reference(v));
      if (!sameOutcome(a, b)) expect.fail(`${show(v)}: ${show(a)} vs ${show(b)}`);
    }
    const bytes = fast('0x00ff') as Uint8Array;
    expect(bytes.constructor).toBe(Uint8Array);
    expect(bytes.buffer.byteLength).toBe(2);
  });

  it('integer decoders: the in-range shortcut gives what the range check gives, value and error', () => {
    for (const name of ['bigint', 'uint256', 'int256'] as const) {
      const fast = compileDecoder(parseType(name));
      const reference = referenceIntegerDecoder(name);
      for (let k = 0; k < N; k++) {
        const v = wireValue('uint256');
        const a = outcome(() => fast(v));
        const b = outcome(() => reference(v));
        if (!sameOutcome(a, b)) expect.fail(`${name} ${show(v)}: ${show(a)} vs ${show(b)}`);
      }
    }
  });
});

/** The bigint / uint256 / int256 decoder as it was before its in-range shortcut. */
function referenceIntegerDecoder(name: 'bigint' | 'uint256' | 'int256'): (v: unknown) => unknown {
  const [min, max] = name === 'bigint' ? [-(2n ** 63n), 2n ** 63n - 1n] : name === 'uint256' ? [0n, 2n ** 256n - 1n] : [-(2n ** 255n), 2n ** 255n - 1n];
  return (v) => {
    if (v == null) return null;
    let n: bigint;
    if (typeof v === 'number') {
      if (!Number.isSafeInteger(v)) {
        throw new Misfit(v, Number.isInteger(v) ? 'is an integer beyond 2^53 parsed as a double, maybe rounded (parse pages with parseJsonLossless)' : `is not an integer (${name})`);
      }
      n = BigInt(v);
    } else if (typeof v === 'bigint') {
      n = v;
    } else if (name !== 'bigint' && typeof v === 'string' && v.length < 90 && /^-?\d+$/.test(v)) {
      n = BigInt(v);
    } else {
      throw new Misfit(v, `is not an integer (${name})`);
    }
    if (n < min || n > max) throw new Misfit(v, `is out of range for ${name}`);
    return n;
  };
}

/** The timestamp decoder as it was before its fixed-position path, over the general parser. */
function referenceTimestampDecoder(typeText: string, mode: 'auto' | 'string'): (v: unknown) => unknown {
  const type = parseType(typeText);
  if (type.kind !== 'timestamp') throw new Error(typeText);
  const { precision, withTimeZone } = type;
  const parts: TimestampParts = { seconds: 0, frac: '', zoned: false };
  const asDate = mode === 'auto' && (withTimeZone || precision <= 3);
  const expected = withTimeZone ? 'YYYY-MM-DD HH:MM:SS[.fraction] UTC' : 'YYYY-MM-DD HH:MM:SS[.fraction]';
  return (v) => {
    if (v == null) return null;
    if (typeof v !== 'string' || !parseTimestampGeneral(v, parts)) throw new Misfit(v, `is not a valid timestamp (${expected})`);
    if (parts.zoned !== withTimeZone) throw new Misfit(v, withTimeZone ? 'has no time zone (UTC or ±HH:MM expected)' : 'has a time zone in a timestamp without time zone');
    if (parts.frac.length > precision && /[1-9]/.test(parts.frac.slice(precision))) throw new Misfit(v, `has more fractional digits than timestamp(${precision})`);
    // Canonical 4-digit years come back as they are; the rest is rewritten (compared through the decoder itself).
    if (!asDate) return v.charCodeAt(4) === 45 && v.charCodeAt(0) !== 45 && v.charCodeAt(11) !== 40 ? v : compileDecoder(type, { timestamps: 'string' })(v);
    const ms = timestampMillis(parts);
    if (!(Math.abs(ms) <= 8.64e15)) throw new Misfit(v, 'is outside the range of a JS Date');
    return new Date(ms);
  };
}

function sameOutcome(a: unknown, b: unknown): boolean {
  return show(a) === show(b);
}

function show(o: unknown): string {
  return JSON.stringify(o, (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v instanceof Uint8Array ? `bytes:${Buffer.from(v).toString('hex')}` : v instanceof Map ? { map: [...v] } : v));
}

// Rows: the one-literal row decoder and the fused appender against the column-by-column paths.

const COLUMNS: ColumnSpec[] = [
  ...SAMPLE_EVENTS_COLUMNS,
  { name: 'ts3', type: 'timestamp(3)' },
  { name: 'ts9', type: 'timestamp(9)' },
  { name: 'small', type: 'tinyint' },
  { name: 'wide', type: 'decimal(40, 2)' },
  { name: 'f', type: 'real' },
  { name: 'tags', type: 'array(integer)' },
  { name: 'u', type: 'uint256' },
  { name: 'i256', type: 'int256' },
  { name: 'bin', type: 'varbinary' },
  { name: 'doc', type: 'json' },
  { name: 'weird "name"\n', type: 'varchar' },
  { name: '0', type: 'smallint' },
];

function wireValue(type: string): unknown {
  const r = rnd();
  if (r < 0.04) return null;
  if (r < 0.06) return undefined;
  if (r < 0.08) return pick(['text', 1.5, -3, true, 2n ** 70n, [1], { a: 1 }, '', 'NaN']);
  switch (type) {
    case 'bigint':
      return pick([int(1e9), -int(1e9), 2n ** 62n, -(2n ** 63n), 2n ** 63n, 2 ** 53, 1.5]);
    case 'timestamp(6) with time zone':
    case 'timestamp(3)':
    case 'timestamp(9)':
      return rnd() < 0.6 ? `${pad(int(10_000), 4)}-${pad(1 + int(12), 2)}-${pad(1 + int(28), 2)} ${pad(int(24), 2)}:${pad(int(60), 2)}:${pad(int(60), 2)}.${digitRun(pick([3, 6, 9]))}${type.includes('zone') ? ' UTC' : ''}` : timestampText();
    case 'varchar':
      return pick(['event_1', 'é', '', 'x'.repeat(int(20))]);
    case 'double':
    case 'real':
      return pick([rnd() * 1e6, 0, -0, 1e300, 'NaN', 'Infinity', 'nope']);
    case 'decimal(18, 4)':
    case 'decimal(40, 2)':
      return rnd() < 0.6 ? `${int(100_000)}.${pad(int(10_000), 4)}` : pick([decimalText(), int(1000), 1.25]);
    case 'integer':
      return pick([int(1000), 2 ** 31, -(2 ** 31), 1.5]);
    case 'boolean':
      return pick([true, false, 0]);
    case 'date':
      return rnd() < 0.6 ? `2026-${pad(1 + int(12), 2)}-${pad(1 + int(28), 2)}` : dateText();
    case 'tinyint':
      return pick([int(128), -128, 128, 200]);
    case 'array(integer)':
      return pick([[1, 2, 3], [], [1, 'x'], [2 ** 40], null]);
    case 'uint256':
    case 'int256':
      return pick([
        '123',
        5,
        -5,
        -0,
        2 ** 53,
        2n ** 200n,
        '-1',
        'x',
        '0',
        '-0',
        '007',
        '',
        '-',
        `${1 + int(9)}${digitRun(int(80))}`,
        `-${1 + int(9)}${digitRun(int(80))}`,
        `${2n ** 256n - 1n}`,
        `${2n ** 256n}`,
        `${2n ** 255n - 1n}`,
        `-${2n ** 255n}`,
        `-${2n ** 255n + 1n}`,
        '1e3',
        ' 1',
      ]);
    case 'json':
      return pick(['{"a":1}', { a: [1, 2n ** 64n] }, 3]);
    case 'smallint':
      return pick([int(30_000), 40_000]);
    case 'varbinary':
      return hexText();
    default:
      return null;
  }
}

function randomRow(columns: readonly ColumnSpec[]): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  for (const c of columns) {
    const v = wireValue(c.type);
    if (v !== undefined) row[c.name] = v;
  }
  return row;
}

/** A row decoder column by column, as compileRowDecoder worked before it built rows as one literal. */
function referenceRowDecoder(columns: readonly ColumnSpec[], options: DecodeOptions): (raw: Record<string, unknown>, rowOffset: number) => Row {
  const single = columns.map((c) => compileRowDecoder([c], options));
  return (raw, rowOffset) => {
    const out: Row = {};
    columns.forEach((c, i) => {
      const one = single[i]!({ [c.name]: raw[c.name] }, rowOffset);
      Object.defineProperty(out, c.name, { value: one[c.name], enumerable: true, writable: true, configurable: true });
    });
    return out;
  };
}

function errorShape(error: unknown): unknown {
  if (!(error instanceof ColumnValueError)) return { other: String(error) };
  return { class: error.constructor.name, code: error.code, column: error.column, type: error.type, rowOffset: error.rowOffset, path: error.path, value: show(error.value), reason: error.reason, message: error.message };
}

function rowOutcome(fn: () => unknown): string {
  try {
    const row = fn() as Row;
    return show({ keys: Object.keys(row), values: Object.values(row).map((v) => (v instanceof Date ? `date:${v.getTime()}` : v)) });
  } catch (error) {
    return show(errorShape(error));
  }
}

describe('whole rows agree with the column-by-column paths', () => {
  it('compileRowDecoder gives the same rows and the same errors (column, row offset, path, value, reason)', () => {
    for (const options of [{}, { timestamps: 'string' }, { dates: 'date' }, { timestamps: 'micros' }, { timestamps: 'nanos' }] as DecodeOptions[]) {
      const fast = compileRowDecoder(COLUMNS, options);
      const reference = referenceRowDecoder(COLUMNS, options);
      let errors = 0;
      for (let i = 0; i < 1500; i++) {
        const raw = rnd() < 0.5 ? cleanRow() : randomRow(COLUMNS);
        const a = rowOutcome(() => fast(raw, 1000 + i));
        const b = rowOutcome(() => reference(raw, 1000 + i));
        if (a !== b) expect.fail(`row ${show(raw)}:\n${a}\nvs\n${b}`);
        if (a.includes('"code"')) errors++;
      }
      // Both outcomes happen often: rows decode, and rows fail.
      expect(errors).toBeGreaterThan(150);
      expect(errors).toBeLessThan(1450);
    }
  });

  it('column names are data in the generated code: quotes, code and line separators stay names', () => {
    const names = ['"]); throw new Error("injected"); (["', "'; globalThis.hit = 1; '", 'a\u2028b\u2029c', '\\', '${x}', 'constructor', 'toString'];
    const columns = names.map((name) => ({ name, type: 'integer' }));
    const raw = Object.fromEntries(names.map((name, i) => [name, i]));
    const row = compileRowDecoder(columns)(raw, 0);
    expect(Object.entries(row)).toEqual(names.map((name, i) => [name, i]));
    expect((globalThis as Record<string, unknown>)['hit']).toBeUndefined();
    const builder = createBatchBuilder(columns);
    compileJsonRowAppender(builder, columns)([raw], 0, 1, 0);
    expect(builder.flush().toArray().map((r) => r.toJSON())).toEqual([raw]);
  });

  it('generated code is made once per source text and shared; code that does not compile gives undefined', () => {
    const a = generated(['x'], 'return function f(r) { return r + x; };');
    expect(a).toBeDefined();
    expect(generated(['x'], 'return function f(r) { return r + x; };')).toBe(a);
    expect((a!(1) as (r: number) => number)(2)).toBe(3);
    expect(generated(['x'], 'return function f(r) { return r +; };')).toBeUndefined();
  });

  it('a row decoder keeps a column named __proto__ as a property, and rejects a non-object row', () => {
    const decode = compileRowDecoder([{ name: 'a', type: 'integer' }, { name: '__proto__', type: 'varchar' }]);
    const row = decode(JSON.parse('{"a":1,"__proto__":"x"}'), 0);
    expect(Object.keys(row)).toEqual(['a', '__proto__']);
    expect(Object.getPrototypeOf(row)).toBe(Object.prototype);
    expect(() => compileRowDecoder(COLUMNS)([1, 2], 5)).toThrow(/"\*" \(row\), row 5: \[1,2\] is not a row object/);
  });

  it('the fused JSON-to-Arrow appender gives the same batch bytes, or the same error, as decode then append', () => {
    const fails = { decode: 0, arrow: 0, none: 0 };
    for (let page = 0; page < 80; page++) {
      const clean = rnd() < 0.4;
      const rows = Array.from({ length: 30 }, () => (clean || rnd() < 0.9 ? cleanRow() : randomRow(COLUMNS)));
      const a = pageOutcome(rows, 'fused');
      const b = pageOutcome(rows, 'two-step');
      if (a !== b) expect.fail(`page ${page}:\n${a.slice(0, 600)}\nvs\n${b.slice(0, 600)}`);
      fails[a.includes('VALUE_DECODE') ? 'decode' : a.includes('ARROW_VALUE') ? 'arrow' : 'none']++;
    }
    expect(fails.decode).toBeGreaterThan(10);
    expect(fails.none).toBeGreaterThan(10);
  });

  it('the fused appender reports a later column\'s decode error before an earlier column\'s Arrow error, as decode then append does', () => {
    // 9999-12-31 in nanoseconds does not fit Int64 (an Arrow error); the date after it does not decode.
    const columns = [
      { name: 'ts9', type: 'timestamp(9)' },
      { name: 'day', type: 'date' },
    ];
    const raw = { ts9: '9999-12-31 00:00:00.000000000', day: '2026-02-30' };
    const good = { ts9: '9999-12-31 00:00:00.000000000', day: '2026-02-28' };
    for (const rows of [[raw], [good]]) {
      const a = pageOutcome(rows, 'fused', columns);
      expect(a).toBe(pageOutcome(rows, 'two-step', columns));
      expect(a).toContain(rows[0] === raw ? 'VALUE_DECODE' : 'ARROW_VALUE');
    }
  });

  it('a builder restarted at another row offset reports misfits there; one with rows pending or broken is not restarted', () => {
    const columns = [{ name: 'ts9', type: 'timestamp(9)' }];
    const builder = createBatchBuilder(columns, { firstRowOffset: 10 });
    const append = compileJsonRowAppender(builder, columns);
    append([{ ts9: '2026-01-01 00:00:00.000000001' }], 0, 1, 10);
    expect(restartRowOffset(builder, 500)).toBe(false);
    expect(builder.flush().numRows).toBe(1);
    expect(restartRowOffset(builder, 500)).toBe(true);
    const error = (() => {
      try {
        append([{ ts9: '2026-01-01 00:00:00' }, { ts9: '9999-12-31 00:00:00' }], 0, 2, 500);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toMatchObject({ code: 'ARROW_VALUE', rowOffset: 501, column: 'ts9' });
    expect(restartRowOffset(builder, 0)).toBe(false);
    // Not a builder of createBatchBuilder: nothing to restart.
    expect(restartRowOffset({ ...createBatchBuilder(columns) }, 0)).toBe(false);
  });

  it('builders whose columns repeat a name, or name __proto__, take the two-step path and agree with it', () => {
    for (const columns of [
      [{ name: 'a', type: 'integer' }, { name: 'a', type: 'varchar' }],
      [{ name: '__proto__', type: 'integer' }, { name: 'b', type: 'date' }],
    ]) {
      for (const raw of [{ a: null, b: '2026-01-01' }, JSON.parse('{"__proto__": 5, "b": "2026-01-02"}'), { a: 5 }, { a: 'x' }]) {
        expect(pageOutcome([raw], 'fused', columns)).toBe(pageOutcome([raw], 'two-step', columns));
      }
    }
  });
});

/** A row of the service's canonical values, nulls aside: the fused path takes every value. */
function cleanRow(): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  for (const c of COLUMNS) {
    let v = wireValue(c.type);
    for (let k = 0; k < 50 && !isClean(c.type, v); k++) v = wireValue(c.type);
    row[c.name] = isClean(c.type, v) ? v : null;
  }
  return row;
}

function isClean(type: string, v: unknown): boolean {
  try {
    compileDecoder(parseType(type), { timestamps: 'string' })(v);
    // Nanoseconds since 1970 fit Int64 for years 1678 to 2261 only.
    return !(type === 'timestamp(9)' && typeof v === 'string' && !(Number(v.slice(0, 4)) >= 1700 && Number(v.slice(0, 4)) <= 2200));
  } catch {
    return false;
  }
}

function pageOutcome(rows: readonly unknown[], how: 'fused' | 'two-step', columns: readonly ColumnSpec[] = COLUMNS): string {
  const builder = createBatchBuilder(columns, { firstRowOffset: 500 });
  const parts: string[] = [];
  try {
    if (how === 'fused') {
      const append = compileJsonRowAppender(builder, columns);
      append(rows, 0, Math.min(10, rows.length), 2000);
      parts.push(ipcHex(builder.flush()));
      append(rows, Math.min(10, rows.length), rows.length, 2000);
    } else {
      const decode = compileRowDecoder(columns, { timestamps: 'string' });
      for (let i = 0; i < 10 && i < rows.length; i++) builder.append(decode(rows[i], 2000 + i));
      parts.push(ipcHex(builder.flush()));
      for (let i = 10; i < rows.length; i++) builder.append(decode(rows[i], 2000 + i));
    }
    parts.push(ipcHex(builder.flush()));
  } catch (error) {
    parts.push(show(errorShape(error)));
  }
  return parts.join('\n');
}

function ipcHex(batch: RecordBatch): string {
  return Buffer.from(RecordBatchStreamWriter.writeAll([batch]).toUint8Array(true)).toString('hex');
}
