import { isDeepStrictEqual } from 'node:util';
import { RecordBatchStreamWriter, type RecordBatch } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { parseResultPage, parseResultPageText } from '../../src/client/resultPage.ts';
import { InvalidResponseError } from '../../src/client/errors.ts';
import { compileJsonRowAppender, compileTextBatchReader } from '../../src/types/batch.ts';
import { arrowSchema, compileRowDecoder, createBatchBuilder, parseJsonLossless, type ColumnSpec, type DecodeOptions, type Row } from '../../src/types/index.ts';
import { textValueReader } from '../../src/types/decode.ts';
import { parseType } from '../../src/types/parse.ts';
import { TextPages } from '../../src/pipeline/stream/textPages.ts';
import { compileTextRowReader, locateRows } from '../../src/types/textRowReader.ts';
import { compileTextRows, readNumber, type ScanState, type TextRead } from '../../src/types/textRows.ts';
import { seeded } from '../helpers/seeded.ts';

/**
 * The text scanner reads a page's rows without `JSON.parse`. Whatever it returns must be exactly
 * what the general path (`parseJsonLossless`, then the row decoder or the JSON row appender) makes
 * of the same text; wherever the general path throws (invalid JSON, a value that does not decode),
 * the scanner must give up, so that the general path raises the error. Both are run over generated
 * pages: canonical ones, and ones with the shapes, tokens and values around the canonical.
 */

const rnd = seeded(20_261_126);
const int = (n: number): number => Math.floor(rnd() * n);
const pick = <T,>(xs: readonly T[]): T => xs[int(xs.length)]!;

const TYPES = [
  'boolean',
  'tinyint',
  'smallint',
  'integer',
  'bigint',
  'uint256',
  'int256',
  'real',
  'double',
  'decimal(18, 4)',
  'decimal(38, 0)',
  'varchar',
  'char',
  'uuid',
  'ipaddress',
  'json',
  'unknown',
  'varbinary',
  'date',
  'time',
  'timestamp(3)',
  'timestamp(6)',
  'timestamp(6) with time zone',
  'timestamp(3) with time zone',
  'interval day to second',
  'interval year to month',
] as const;

/** Raw JSON tokens around what each type takes (some are not JSON at all). */
const NUMBERS = [
  '0', '-0', '1', '-1', '127', '128', '-129', '32767', '2147483647', '2147483648', '-2147483648',
  '9007199254740991', '9007199254740992', '-9007199254740993', '12345678901234567890', '-99999999999999999999999',
  '1.5', '-0.0', '0.1', '79.19', '123456789012345.6', '1234567890123456.7', '0.00000000000000000000001',
  '1e5', '1E-7', '-2.5e+3', '1.7976931348623157e308', '5e-324', '1e400', '3.0', '100.25',
  '01', '1.', '-', '+1', '.5', '1e', '1.5.3', '0x10', 'NaN', 'Infinity',
];
const STRINGS = [
  '"event_1"', '""', '"a long text of more than thirteen chars"', '"é unicode ✓ 🎉"', '"0.0000"', '"10.4729"', '"-12.5"',
  '"2026-01-01"', '"2026-13-01"', '"0044-03-15 (BC)"', '"2026-01-01 00:00:01.234567 UTC"', '"2026-01-01 00:00:01.234 UTC"',
  '"2026-01-01 00:00:01.234"', '"2026-01-01 00:00:01"', '"2026-01-01T00:00:01Z"', '"2026-10-31 23:59:5"', '"12:34:56.789"',
  '"0xdeadbeef"', '"0xabc"', '"NaN"', '"Infinity"', '"-Infinity"', '"123456789012345678901234567890"', '"-5"',
  '"1 02:03:04.500"', '"2-3"', '"6ba7b810-9dad-11d1-80b4-00c04fd430c8"', '"192.168.0.1"',
  '"tab\there"', '"new\nline"', '"esc\\"aped"', '"\\u00e9"', '"back\\\\slash"', '"unterminated',
];
const OTHERS = ['true', 'false', 'null', 'nul', 'True', '{"a":1}', '[1,2]', '[]', '{}'];

/** Tokens each type takes. */
const VALID: Record<(typeof TYPES)[number], readonly string[]> = {
  boolean: ['true', 'false'],
  tinyint: ['0', '-128', '127', '-0'],
  smallint: ['32767', '-5'],
  integer: ['2147483647', '-2147483648', '42'],
  bigint: ['9007199254740991', '-9007199254740993', '12', '9223372036854775807'],
  uint256: ['"115792089237316195423570985008687907853269984665640564039457584007913129639935"', '7', '"0"'],
  int256: ['"-5"', '12345678901234567890', '3'],
  real: ['1.5', '-0.0', '1e5', '"NaN"'],
  double: ['79.19', '5e-324', '-2.5e+3', '"-Infinity"', '1234567890123456.7', '0.1'],
  'decimal(18, 4)': ['"10.4729"', '"0.0000"', '"-12.5"', '3'],
  'decimal(38, 0)': ['"123456789012345678901234567890"', '"-5"'],
  varchar: ['"event_1"', '""', '"a long text of more than thirteen chars"', '"é unicode ✓ 🎉"'],
  char: ['"x"'],
  uuid: ['"6ba7b810-9dad-11d1-80b4-00c04fd430c8"'],
  ipaddress: ['"192.168.0.1"'],
  json: ['"{}"', '"[1]"'],
  unknown: ['"?"'],
  varbinary: ['"0xdeadbeef"', '"0x"'],
  date: ['"2026-01-01"', '"0044-03-15 (BC)"'],
  time: ['"12:34:56.789"', '"00:00:00"'],
  'timestamp(3)': ['"2026-01-01 00:00:01.234"', '"2026-01-01 00:00:01"', '"2026-01-01 00:00:01.234000"', '"2026-01-01T00:00:01"'],
  'timestamp(6)': ['"2026-01-01 00:00:01.234567"', '"2026-01-01T00:00:01"'],
  'timestamp(6) with time zone': [
    '"2026-01-01 00:00:01.234567 UTC"', '"2026-01-01T00:00:01Z"', '"2026-01-01 00:00:01.234 UTC"', '"9999-12-31 23:59:59.999999 UTC"',
    '"0001-01-01 00:00:00 UTC"', '"2026-01-01 00:00:01+02:00"', '"2026-01-01 00:00:01.2345670 UTC"',
  ],
  'timestamp(3) with time zone': ['"2026-01-01 00:00:01.234 UTC"', '"2026-01-01 00:00:01.234000 UTC"', '"2026-01-01T00:00:01Z"'],
  'interval day to second': ['"1 02:03:04.500"', '1500'],
  'interval year to month': ['"2-3"', '14'],
};

function valid(column: ColumnSpec): string {
  if (rnd() < 0.1) return 'null';
  const v = pick(VALID[column.type as (typeof TYPES)[number]]);
  if (!v.startsWith('"') || rnd() > 0.03) return v;
  // A raw control character, which JSON does not allow in a string, anywhere in the text.
  const at = 1 + int(v.length - 1);
  return `${v.slice(0, at)}${pick(['\n', '\t', '\u0000', '\u001f'])}${v.slice(at)}`;
}

function token(): string {
  const r = rnd();
  return r < 0.45 ? pick(NUMBERS) : r < 0.9 ? pick(STRINGS) : pick(OTHERS);
}

/** Spaces where JSON allows them (sometimes), or none. */
function gap(loose: boolean): string {
  return loose && rnd() < 0.3 ? pick([' ', '  ', '\n', '\t', '\r\n ']) : '';
}

interface Page {
  text: string;
  columns: ColumnSpec[];
}

/** A page of `rows` rows; `oddity` in [0, 1) is how likely each row is to leave the canonical shape. */
function page(columns: ColumnSpec[], rows: number, values: (column: ColumnSpec) => string, oddity: number): Page {
  const loose = rnd() < 0.3;
  const out: string[] = [];
  for (let r = 0; r < rows; r++) {
    let fields = columns.map((c) => `${JSON.stringify(c.name)}${gap(loose)}:${gap(loose)}${values(c)}`);
    if (rnd() < oddity) {
      switch (int(5)) {
        case 0:
          fields = fields.slice(1);
          break;
        case 1:
          fields.push(`"extra":1`);
          break;
        case 2:
          if (fields.length > 1) [fields[0], fields[1]] = [fields[1]!, fields[0]!];
          break;
        case 3:
          fields.push(fields[0]!);
          break;
        default:
          fields[int(fields.length)] = `${JSON.stringify(pick(columns).name)}:${token()}`;
      }
    }
    out.push(`{${gap(loose)}${fields.join(`${gap(loose)},${gap(loose)}`)}${gap(loose)}}`);
  }
  const names = JSON.stringify(columns.map((c) => c.name));
  const types = JSON.stringify(columns.map((c) => c.type));
  const rowsText = `[${gap(loose)}${out.join(`${gap(loose)},${gap(loose)}`)}${gap(loose)}]`;
  const text =
    `{"execution_id":"01HX","query_id":0,"state":"QUERY_STATE_COMPLETED","is_execution_finished":true,` +
    `"submitted_at":"2026-11-26T00:00:00Z","expires_at":"2027-02-24T00:00:00Z",` +
    `"result":{"rows":${gap(loose)}${rowsText},"metadata":{"column_names":${names},"column_types":${types},` +
    `"row_count":${rows},"result_set_bytes":100,"total_row_count":${rows},"total_result_set_bytes":100,"datapoint_count":${rows * columns.length},` +
    `"pending_time_millis":1,"execution_time_millis":1}},"next_offset":${rows}}`;
  return { text, columns };
}

/**
 * A random read: random columns, a page of 1-6 rows (canonical half the time, else with odd shapes
 * and tokens), rows `[from, to)` of it, and one of `options`.
 */
function randomRead(options: readonly DecodeOptions[]) {
  const columns = randomColumns();
  const canonical = rnd() < 0.5;
  const p = page(columns, 1 + int(6), (c) => (canonical && rnd() < 0.97 ? valid(c) : token()), canonical ? 0 : 0.15);
  const from = int(3);
  return { columns, p, from, to: from + int(6), options: pick(options) };
}

function randomColumns(): ColumnSpec[] {
  const n = 1 + int(6);
  return Array.from({ length: n }, (_, i) => ({ name: pick(['id', 'ts', 'name', 'value', 'a b', 'ключ', 'x"y', '1', '🎉k', 'a_column_name_longer_than_twenty_four']) + i, type: pick(TYPES) }));
}

/** The general path: the page's rows from `from` to `to`, decoded; or the error it throws. */
function general(text: string, columns: ColumnSpec[], from: number, to: number, options: DecodeOptions): { rows: Row[] } | { error: unknown } {
  try {
    const rows = (parseJsonLossless(text) as { result: { rows: unknown[] } }).result.rows;
    const decode = compileRowDecoder(columns, options);
    const out: Row[] = [];
    for (let i = from; i < Math.min(to, rows.length); i++) out.push(decode(rows[i], i));
    return { rows: out };
  } catch (error) {
    return { error };
  }
}

function ipc(batch: RecordBatch): Buffer {
  return Buffer.from(RecordBatchStreamWriter.writeAll([batch]).toUint8Array(true));
}

function generalBatch(text: string, columns: ColumnSpec[], from: number, to: number): { bytes: Buffer } | { error: unknown } {
  try {
    const rows = (parseJsonLossless(text) as { result: { rows: unknown[] } }).result.rows;
    const builder = createBatchBuilder(arrowSchema(columns), { firstRowOffset: from });
    compileJsonRowAppender(builder, columns)(rows, from, Math.min(to, rows.length), 0);
    return { bytes: ipc(builder.flush()) };
  } catch (error) {
    return { error };
  }
}

/** Same rows, same keys in the same order, values by `Object.is` (-0, NaN) and structure. */
function sameRows(a: readonly Row[], b: readonly Row[]): boolean {
  return a.length === b.length && a.every((row, i) => isDeepStrictEqual(Object.keys(row), Object.keys(b[i]!)) && isDeepStrictEqual(row, b[i]));
}

describe('text scanner against JSON.parse and the decoders', () => {
  it('reads canonical pages of every scalar type, value for value, and gives up wherever the general path throws', () => {
    let read = 0;
    let gaveUp = 0;
    let generalThrew = 0;
    for (let k = 0; k < 1500; k++) {
      const { columns, p, from, to, options } = randomRead([{}, {}, { dates: 'date' }, { timestamps: 'string' }, { timestamps: 'micros' }, { timestamps: 'nanos' }]);
      const expected = general(p.text, columns, from, to, options);
      const reader = compileTextRows(columns, options);
      expect(reader).toBeDefined();
      const got = reader!(p.text, from, to);
      if ('error' in expected) generalThrew++;
      if (got === undefined) {
        gaveUp++;
        continue;
      }
      read++;
      if ('error' in expected) throw new Error(`scanner read what the general path refuses (${String(expected.error)}):\n${p.text}`);
      if (!sameRows(got.value, expected.rows)) throw new Error(`rows differ for\n${p.text}\nscanner: ${String(got.value.map((r) => JSON.stringify(r, (_, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v))))}`);
    }
    // Both outcomes happen often enough for the comparison to mean something.
    expect(read).toBeGreaterThan(300);
    expect(gaveUp).toBeGreaterThan(300);
    expect(generalThrew).toBeGreaterThan(200);
  });

  it('writes the same Arrow batch as the JSON row appender, and gives up wherever it throws', () => {
    let read = 0;
    for (let k = 0; k < 800; k++) {
      const columns = randomColumns();
      const p = page(columns, 1 + int(5), (c) => (rnd() < 0.97 ? valid(c) : token()), 0.05);
      const from = int(2);
      const to = from + 1 + int(5);
      const expected = generalBatch(p.text, columns, from, to);
      const reader = compileTextBatchReader(arrowSchema(columns), columns);
      expect(reader).toBeDefined();
      const got = reader!(p.text, from, to, from);
      if (got === undefined) continue;
      read++;
      if ('error' in expected) throw new Error(`scanner read what the appender refuses (${String(expected.error)}):\n${p.text}`);
      expect(ipc(got.value).equals(expected.bytes), p.text).toBe(true);
    }
    expect(read).toBeGreaterThan(150);
  });

  it('after a page it gave up on half-way, reads the next page from a clean builder', () => {
    const columns = [
      { name: 'id', type: 'integer' },
      { name: 'd', type: 'date' },
    ];
    const reader = compileTextBatchReader(arrowSchema(columns), columns)!;
    let row = 0;
    const bad = page(columns, 6, (c) => (c.type === 'integer' ? String(row++) : row === 4 ? '"2026-02-30"' : '"2026-01-01"'), 0);
    expect(reader(bad.text, 0, 6, 0)).toBeUndefined();
    const good = page(columns, 3, (c) => (c.type === 'integer' ? '7' : '"2026-01-02"'), 0);
    const got = reader(good.text, 0, 3, 100)!;
    const expected = generalBatch(good.text, columns, 0, 3);
    expect('bytes' in expected && ipc(got.value).equals(expected.bytes)).toBe(true);
    expect(got.value.numRows).toBe(3);
  });

  it('reads numbers exactly as JSON.parse (and integers beyond 2^53 as bigint, as the lossless parser)', () => {
    const o: ScanState = { v: undefined, count: 0 };
    const digits = (n: number) => Array.from({ length: n }, (_, i) => String(i === 0 ? 1 + int(9) : int(10))).join('');
    for (let k = 0; k < 20_000; k++) {
      const sign = rnd() < 0.3 ? '-' : '';
      const whole = rnd() < 0.2 ? '0' : digits(1 + int(20));
      const fraction = rnd() < 0.5 ? `.${Array.from({ length: 1 + int(25) }, () => String(int(10))).join('')}` : '';
      const exponent = rnd() < 0.1 ? `e${pick(['', '+', '-'])}${int(30)}` : '';
      const text = `${sign}${whole}${fraction}${exponent}`;
      const end = readNumber(`${text},`, 0, o);
      expect(end, text).toBe(text.length);
      expect(Object.is(o.v, parseJsonLossless(text)) || o.v === parseJsonLossless(text), text).toBe(true);
    }
    for (const bad of ['-', '.5', '+1', '1.', '1e', '1e+', '-x']) expect(readNumber(`${bad},`, 0, o), bad).toBe(-1);
  });

  it('gives up on a page with any escape, and on columns it cannot read', () => {
    const columns = [{ name: 'a', type: 'varchar' }];
    const reader = compileTextRows(columns)!;
    expect(reader(page(columns, 2, () => '"plain"', 0).text, 0, 9)?.value).toEqual([{ a: 'plain' }, { a: 'plain' }]);
    // The escape is in the envelope, not in a row: the page still goes the general way.
    const escaped = page(columns, 2, () => '"plain"', 0).text.replace('"01HX"', '"01\\u0048X"');
    expect(reader(escaped, 0, 9)).toBeUndefined();
    expect(compileTextRows([{ name: 'a', type: 'array(integer)' }])).toBeUndefined();
    expect(compileTextRows([{ name: '__proto__', type: 'integer' }])).toBeUndefined();
    expect(compileTextRows([{ name: 'a', type: 'integer' }, { name: 'a', type: 'integer' }])).toBeUndefined();
  });

  it('takes timestamps read as Date straight from the text, and leaves any other text to the decoder', () => {
    const columns = [
      { name: 'z', type: 'timestamp(6) with time zone' },
      { name: 'm', type: 'timestamp(3)' },
    ];
    const values = [
      ['"2026-01-01 00:00:01.234567 UTC"', '"2026-01-01 00:00:01.234"'],
      ['"2026-01-01T00:00:01+02:00"', '"2026-01-01T00:00:01"'],
      ['"9999-12-31 23:59:59.999999 UTC"', '"0001-01-01 00:00:00"'],
      ['null', 'null'],
    ];
    let k = 0;
    const text = page(columns, values.length, () => values[Math.floor(k / 2)]![k++ % 2]!, 0).text;
    for (const options of [{}, { timestamps: 'string' }] satisfies DecodeOptions[]) {
      const got = compileTextRows(columns, options)!(text, 0, values.length)!.value;
      const expected = general(text, columns, 0, values.length, options) as { rows: Row[] };
      expect(got).toEqual(expected.rows);
      if (options.timestamps === undefined) {
        expect(got[0]).toEqual({ z: new Date(Date.UTC(2026, 0, 1, 0, 0, 1, 234)), m: new Date(Date.UTC(2026, 0, 1, 0, 0, 1, 234)) });
        expect(got[1]!['z']).toEqual(new Date(Date.UTC(2025, 11, 31, 22, 0, 1)));
      } else {
        expect(got[0]).toEqual({ z: '2026-01-01 00:00:01.234567 UTC', m: '2026-01-01 00:00:01.234' });
      }
    }
    // The reader the scanner uses: only for timestamps decoded as Date, reading from anywhere in a text.
    const out = { value: undefined as unknown };
    const read = textValueReader(parseType('timestamp(6) with time zone'), {}, out)!;
    const line = '"ts":"2026-01-01 00:00:01.5 UTC","next"';
    expect(read(line, 6, 31)).toBe(true);
    expect(out.value).toEqual(new Date(Date.UTC(2026, 0, 1, 0, 0, 1, 500)));
    expect(read(line, 6, 30)).toBe(false);
    expect(textValueReader(parseType('timestamp(6) with time zone'), { timestamps: 'string' }, out)).toBeUndefined();
    expect(textValueReader(parseType('timestamp(6)'), {}, out)).toBeUndefined();
    expect(textValueReader(parseType('date'), {}, out)).toBeUndefined();
    // A canonical text that does not fit the column (too many fraction digits, no zone where one
    // is required) is the decoder's to refuse: the scanner gives up and the general path raises.
    for (const bad of ['"2026-01-01 00:00:01.1234567 UTC"', '"2026-01-01 00:00:01"', '"2026-13-01 00:00:00 UTC"']) {
      const badText = page([columns[0]!], 1, () => bad, 0).text;
      expect(compileTextRows([columns[0]!])!(badText, 0, 1), bad).toBeUndefined();
      expect('error' in general(badText, [columns[0]!], 0, 1, {}), bad).toBe(true);
    }
  });

  it('copies long strings, so a row kept does not keep its page text', () => {
    const columns = [{ name: 'a', type: 'varchar' }];
    const text = page(columns, 1, () => '"a long text of more than thirteen chars"', 0).text;
    const row = compileTextRows(columns)!(text, 0, 1)!.value[0]!;
    expect(row['a']).toBe('a long text of more than thirteen chars');
  });
});

describe('parseResultPageText', () => {
  const columns = [
    { name: 'id', type: 'integer' },
    { name: 'name', type: 'varchar' },
  ];
  const reader = compileTextRows(columns)!;
  const ctx = { method: 'getResults' };
  const read = (text: string) => parseResultPageText({ text }, ctx, (t) => reader(t, 0, Number.MAX_SAFE_INTEGER));

  it('gives the envelope parseResultPage gives, with the rows read from the text', () => {
    const { text } = page(columns, 3, (c) => (c.type === 'integer' ? '7' : '"x"'), 0);
    const got = read(text)!;
    const general = parseResultPage({ text }, ctx);
    expect(got.value).toEqual(general.result!.rows);
    expect({ ...got.page, result: { ...got.page.result!, rows: [] } }).toEqual({ ...general, result: { ...general.result!, rows: [] } });
  });

  it('raises the errors parseResultPage raises: a row count that differs, an envelope off the protocol', () => {
    const { text } = page(columns, 3, (c) => (c.type === 'integer' ? '7' : '"x"'), 0);
    const miscounted = text.replace('"row_count":3', '"row_count":4');
    expect(() => read(miscounted)).toThrow(InvalidResponseError);
    expect(() => read(miscounted)).toThrow('result.rows holds 3 rows but result.metadata.row_count says 4');
    expect(() => parseResultPage({ text: miscounted }, ctx)).toThrow('result.rows holds 3 rows but result.metadata.row_count says 4');
    const offProtocol = text.replace('"state":"QUERY_STATE_COMPLETED"', '"state":"DONE"');
    expect(() => read(offProtocol)).toThrow(/does not match the protocol/);
  });

  it('leaves a page with a "rows" array besides result.rows to the general path, even when result.rows is empty', () => {
    const text =
      '{"execution_id":"01HX","query_id":0,"state":"QUERY_STATE_COMPLETED","is_execution_finished":true,"result":{"rows":[],' +
      '"metadata":{"column_names":["id","name"],"column_types":["integer","varchar"],"row_count":0,"result_set_bytes":0,"total_row_count":0,' +
      '"total_result_set_bytes":0,"datapoint_count":0}}}';
    expect(read(text)?.value).toEqual([]);
    const decoys = [
      // Before result: another object's "rows".
      text.replace('"query_id":0,', '"query_id":0,"extra":{"rows":[{"id":1,"name":"decoy"}]},'),
      // Twice in result: JSON keeps the last one.
      text.replace('"rows":[]', '"rows":[{"id":1,"name":"decoy"}],"rows":[]'),
      text.replace('"rows":[]', '"rows":[{"id":1,"name":"decoy"}],"rows":[]').replace('"row_count":0', '"row_count":1'),
    ];
    for (const decoy of decoys) {
      expect(read(decoy), decoy).toBeUndefined();
      // What the general path makes of it, the caller then gets (a page or its error).
      expect(() => parseResultPage({ text: decoy }, ctx), decoy).not.toThrow(TypeError);
    }
    expect(parseResultPage({ text: decoys[1]! }, ctx).result!.rows).toEqual([]);
    expect(() => parseResultPage({ text: decoys[2]! }, ctx)).toThrow('result.rows holds 0 rows but result.metadata.row_count says 1');
  });

  it('leaves a page whose first "rows" array is not result.rows to the general path', () => {
    const { text } = page(columns, 2, (c) => (c.type === 'integer' ? '7' : '"x"'), 0);
    const decoy = text.replace('"query_id":0,', '"query_id":0,"extra":{"rows":[{"id":1,"name":"decoy"}]},');
    expect(read(decoy)).toBeUndefined();
    expect(parseResultPage({ text: decoy }, ctx).result!.rows).toHaveLength(2);
  });
});

describe('rows read a few at a time as they are used (compileTextRowReader, TextPages)', () => {
  const ctx = { method: 'getResults' };
  /** A page's answer as the client hands it over, counting its general parses. */
  const answer = (text: string) => {
    const a = {
      parses: 0,
      parse: () => {
        a.parses++;
        return parseResultPage({ text }, ctx);
      },
      parseText: <T,>(read: (t: string) => TextRead<T> | undefined) => parseResultPageText({ text }, ctx, read),
    };
    return a;
  };
  type Outcome = { rows: Row[]; error?: string };
  /** The stream's general path: the page parsed, then rows `from` to `to - 1` decoded until one throws. */
  const parsedPath = (text: string, columns: ColumnSpec[], from: number, to: number, options: DecodeOptions, offset: number): Outcome => {
    const out: Row[] = [];
    try {
      const rows = parseResultPage({ text }, ctx).result!.rows;
      const decode = compileRowDecoder(columns, options);
      for (let i = from; i < Math.min(to, rows.length); i++) out.push(decode(rows[i], offset + i));
      return { rows: out };
    } catch (error) {
      return { rows: out, error: String(error) };
    }
  };
  /** The rows read from the text, one at a time, until one throws; undefined when the page is parsed at once. */
  const textPath = (text: string, columns: ColumnSpec[], from: number, to: number, options: DecodeOptions, offset: number) => {
    const reader = compileTextRowReader(columns, options)!;
    const a = answer(text);
    let got;
    try {
      got = new TextPages({ rows: reader, eager: undefined, decode: compileRowDecoder(columns, options) }).read(a, offset, from, to);
    } catch (error) {
      return { outcome: { rows: [], error: String(error) } as Outcome, parses: a.parses, lastRead: false };
    }
    if (got === undefined) return undefined;
    const out: Row[] = [];
    const count = got.page.result!.metadata.row_count;
    try {
      for (let i = from; i < Math.min(to, count); i++) out.push(got.typed!.at(i));
      return { outcome: { rows: out } as Outcome, parses: a.parses, lastRead: from < count && to >= count };
    } catch (error) {
      return { outcome: { rows: out, error: String(error) } as Outcome, parses: a.parses, lastRead: from < count && to >= count };
    }
  };

  it('gives the rows and the errors of the parsed page, row for row, and parses only pages with a row it does not read', () => {
    let read = 0;
    let parsed = 0;
    let errors = 0;
    for (let k = 0; k < 1500; k++) {
      const { columns, p, from, to, options } = randomRead([{}, {}, { dates: 'date' }, { timestamps: 'string' }, { timestamps: 'micros' }]);
      const offset = int(2) * 1000;
      const got = textPath(p.text, columns, from, to, options, offset);
      if (got === undefined) continue;
      read++;
      if (got.parses > 0) parsed++;
      const expected = parsedPath(p.text, columns, from, to, options, offset);
      if (expected.error !== undefined) errors++;
      // A page that does not parse: the rows before the row where that shows are handed out (each
      // what its text says), then the parse's error; no error when the read ends before the page's
      // last row (the page is checked as far as it is read). Every other page: the same rows, the same error.
      const unparsed = expected.error !== undefined && expected.rows.length === 0 && /response is not JSON|does not match the protocol|row_count/.test(expected.error);
      const sameError = got.outcome.error === expected.error || (unparsed && got.outcome.error === undefined && !got.lastRead);
      if ((!unparsed && !sameRows(got.outcome.rows, expected.rows)) || !sameError) {
        throw new Error(`differs for\n${p.text}\nfrom ${from} to ${to}: ${JSON.stringify(got.outcome, (_, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v))}\nparsed: ${expected.error}`);
      }
    }
    expect(read).toBeGreaterThan(600);
    expect(parsed).toBeGreaterThan(200);
    expect(read - parsed).toBeGreaterThan(300);
    expect(errors).toBeGreaterThan(200);
  });

  it('reads rows only when they are near: rows before a chunk with a value that does not decode come from the text, that value raises the general error', () => {
    const columns = [
      { name: 'id', type: 'integer' },
      { name: 'day', type: 'date' },
    ];
    let n = 0;
    const { text } = page(columns, 1100, (c) => (c.type === 'integer' ? String(n++) : n === 701 ? '"2026-02-30"' : '"2026-01-01"'), 0);
    const a = answer(text);
    const rows = new TextPages({ rows: compileTextRowReader(columns)!, eager: undefined, decode: compileRowDecoder(columns) }).read(a, 7000, 0, 1100)!.typed!;
    for (let i = 0; i < 512; i++) expect(rows.at(i)).toEqual({ id: i, day: '2026-01-01' });
    // Row 700 is in the next chunk of rows, not read yet.
    expect(a.parses).toBe(0);
    expect(rows.at(512)).toEqual({ id: 512, day: '2026-01-01' });
    expect(a.parses).toBe(1);
    expect(() => rows.at(700)).toThrow(/day.*7700|7700.*day/s);
    // The general path serves the page's rest.
    expect(rows.at(701)).toEqual({ id: 701, day: '2026-01-01' });
  });

  it('reads pages of many chunks of rows from any row to any row, as the parsed page gives them', () => {
    const columns = [
      { name: 'id', type: 'bigint' },
      { name: 'ts', type: 'timestamp(6) with time zone' },
      { name: 'name', type: 'varchar' },
      { name: 'amount', type: 'decimal(18, 4)' },
    ];
    const { text } = page(columns, 1300, (c) => pick(VALID[c.type as (typeof TYPES)[number]].filter((v) => !v.includes('+') && !v.includes('(BC)'))), 0);
    for (const [from, to] of [
      [0, 1300],
      [600, 1300],
      [511, 513],
      [1023, 1025],
      [5, 1000],
      [1299, 1300],
    ] as const) {
      const got = textPath(text, columns, from, to, {}, 0)!;
      expect(got.parses, `${from}-${to}`).toBe(0);
      const expected = parsedPath(text, columns, from, to, {}, 0);
      expect(got.outcome.rows.length, `${from}-${to}`).toBe(to - from);
      expect(sameRows(got.outcome.rows, expected.rows), `${from}-${to}`).toBe(true);
    }
  });

  it('locates the rows around whitespace and a column named "metadata", and parses a page whose rows do not end where its envelope starts', () => {
    const columns = [
      { name: 'metadata', type: 'varchar' },
      { name: 'id', type: 'integer' },
    ];
    const { text } = page(columns, 3, (c) => (c.type === 'integer' ? '7' : '"metadata"'), 0);
    const spaced = text.replace('}],"metadata":', '}\n] ,\n "metadata" :');
    for (const t of [text, spaced]) {
      const got = textPath(t, columns, 0, 9, {}, 0)!;
      expect(got.outcome).toEqual({ rows: Array.from({ length: 3 }, () => ({ metadata: 'metadata', id: 7 })) });
      expect(got.parses, t).toBe(0);
    }
    const fewer = text.replace('"row_count":3', '"row_count":4');
    expect(textPath(fewer, columns, 0, 9, {}, 0)!.outcome.error).toMatch('result.rows holds 3 rows but result.metadata.row_count says 4');
    // Row 1 is not the last: the parse's error.
    const more = text.replace('"row_count":3', '"row_count":2');
    expect(textPath(more, columns, 0, 9, {}, 0)!.outcome).toEqual({ rows: [], error: expect.stringContaining('result.rows holds 3 rows but result.metadata.row_count says 2') });
  });

  it('never hands out the rows of an array that JSON does not keep as result.rows', () => {
    const columns = [
      { name: 'id', type: 'integer' },
      { name: 'name', type: 'varchar' },
    ];
    const { text } = page(columns, 3, (c) => (c.type === 'integer' ? '7' : '"real"'), 0);
    const decoy = '{"id":1,"name":"decoy"},{"id":2,"name":"decoy"},{"id":3,"name":"decoy"}';
    const real = Array.from({ length: 3 }, () => ({ id: 7, name: 'real' }));
    for (const twice of [text.replace('"rows":[', `"rows":[${decoy}],"rows":[`), text.replace('"rows":[', `"rows":[${decoy}] ,\n"other":1,"rows":[`)]) {
      expect(parseResultPage({ text: twice }, ctx).result!.rows).toEqual(real.map((r) => ({ ...r })));
      // Not located: the page goes the eager way (which finds the array it read is not result.rows) or is parsed.
      expect(locateRows(twice), twice).toBeUndefined();
      expect(textPath(twice, columns, 0, 9, {}, 0), twice).toBeUndefined();
    }
    // A `]` inside a string is no array's end: such a page is still read from its text.
    const bracket = page(columns, 2, (c) => (c.type === 'integer' ? '7' : '"a],b]}"'), 0).text;
    expect(textPath(bracket, columns, 0, 9, {}, 0)).toBeUndefined();
    const inString = page(columns, 2, (c) => (c.type === 'integer' ? '7' : '"[1] [2]"'), 0).text;
    expect(textPath(inString, columns, 0, 9, {}, 0)).toMatchObject({ outcome: { rows: [{ id: 7, name: '[1] [2]' }, { id: 7, name: '[1] [2]' }] }, parses: 0 });
  });
});
