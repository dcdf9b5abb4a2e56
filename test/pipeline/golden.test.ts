// Every column type of protocol.md section 5, with NULLs and extremes (sample.all_types), from the
// real local service through JSON to JS values and to Arrow, compared exactly with values written
// down here by hand from the table's SQL (src/service/engine/sampleDataset.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceClient } from '../../src/client/index.ts';
import { stream } from '../../src/pipeline/stream.ts';
import { ArrowValueError } from '../../src/types/errors.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { ALL_TYPES_COLUMN_TYPES as COLUMN_TYPES } from '../helpers/allTypes.ts';
import { arrowRows } from './arrowCells.ts';

let svc: TestService;
let client: ServiceClient;

beforeAll(async () => {
  // Two rows a page: the four rows of all_types cross page boundaries.
  svc = await startTestService({ limits: { page_rows: 2 } });
  client = new ServiceClient({ baseUrl: svc.url, apiKey: svc.keys.demo.write });
});
afterAll(async () => {
  await client?.close();
  await svc?.close();
});

const SQL = 'SELECT * FROM sample.all_types ORDER BY id';
const I64_MAX = 2n ** 63n - 1n;
const I64_MIN = -(2n ** 63n);
const U256_MAX = 2n ** 256n - 1n;
const I256_MAX = 2n ** 255n - 1n;
const I256_MIN = -(2n ** 255n);
const I128_MAX = 2n ** 127n - 1n;
const I128_MIN = -(2n ** 127n);
const bytes = (...b: number[]) => new Uint8Array(b);
const ms = (iso: string) => BigInt(Date.parse(`${iso}Z`));
const days = (iso: string) => Date.parse(`${iso}T00:00:00Z`) / 86_400_000;

const ARROW_TYPES = {
  id: 'Int32',
  c_boolean: 'Bool',
  c_tinyint: 'Int8',
  c_smallint: 'Int16',
  c_integer: 'Int32',
  c_bigint: 'Int64',
  c_uint256: 'Utf8',
  c_int256: 'Utf8',
  c_real: 'Float32',
  c_double: 'Float64',
  c_decimal: 'Decimal[38e+10]',
  c_varchar: 'Utf8',
  c_varbinary: 'Binary',
  c_json: 'Utf8',
  c_date: 'Date32<DAY>',
  c_time: 'Time64<MICROSECOND>',
  c_timestamp: 'Timestamp<MICROSECOND>',
  c_timestamptz: 'Timestamp<MICROSECOND, UTC>',
  c_timestamp_ms: 'Timestamp<MILLISECOND>',
  c_timestamp_ns: 'Timestamp<NANOSECOND>',
  c_interval: 'Duration<MILLISECOND>',
  c_interval_ym: 'Int32',
  c_array: 'List<Int64>',
  c_array_rows: 'List<Struct<{a:Int64, b:Utf8}>>',
  c_map: 'Map<{key:Utf8, value:Int64}>',
  c_row: 'Struct<{x:Int32, nested:Struct<{y:Utf8, z:List<Float64>}>}>',
  c_uuid: 'Utf8',
  c_hugeint: 'Utf8',
};

const NULLS = Object.fromEntries(Object.keys(COLUMN_TYPES).map((k) => [k, null]));

/** The JS values of types.md. */
const ROWS = [
  {
    id: 1,
    c_boolean: true,
    c_tinyint: 1,
    c_smallint: 1,
    c_integer: 1,
    c_bigint: 9007199254740993n, // 2^53 + 1: JSON.parse alone would give ...992
    c_uint256: 12345678901234567890n,
    c_int256: -5n,
    c_real: 1.5,
    c_double: 0.1,
    c_decimal: '12345678901234567890123456.0123456789',
    c_varchar: 'héllo, "world"\nline 2',
    c_varbinary: bytes(0xde, 0xad, 0xbe, 0xef),
    c_json: '{"a": [1, 2], "b": null}',
    c_date: '2026-11-20',
    c_time: '10:15:30.123456',
    c_timestamp: '2026-11-20 10:15:30.123456',
    c_timestamptz: new Date('2026-11-20T10:15:30.123Z'),
    c_timestamp_ms: new Date('2026-11-20T10:15:30.123Z'),
    c_timestamp_ns: '2026-11-20 10:15:30.123456789',
    c_interval: 93_784_567,
    c_interval_ym: 14,
    c_array: [1n, 2n, null],
    c_array_rows: [{ a: 1n, b: 'x' }],
    c_map: new Map([
      ['k1', 1n],
      ['k2', null],
    ]),
    c_row: { x: 1, nested: { y: 'deep', z: [1.5, 2.5] } },
    c_uuid: '0f8fad5b-d9cb-469f-a165-70867728950e',
    c_hugeint: I128_MAX,
  },
  {
    id: 2,
    c_boolean: false,
    c_tinyint: 127,
    c_smallint: 32767,
    c_integer: 2147483647,
    c_bigint: I64_MAX,
    c_uint256: U256_MAX,
    c_int256: I256_MAX,
    c_real: Number.NaN,
    c_double: Number.POSITIVE_INFINITY,
    c_decimal: '9999999999999999999999999999.9999999999',
    c_varchar: '',
    c_varbinary: bytes(),
    c_json: '[]',
    c_date: '1970-01-01',
    c_time: '00:00:00.000000',
    c_timestamp: '1970-01-01 00:00:00.000000',
    c_timestamptz: new Date(0),
    c_timestamp_ms: new Date(0),
    c_timestamp_ns: '1970-01-01 00:00:00.000000000',
    c_interval: 0,
    c_interval_ym: 0,
    c_array: [],
    c_array_rows: [],
    c_map: new Map(),
    c_row: { x: null, nested: null },
    c_uuid: '00000000-0000-0000-0000-000000000000',
    c_hugeint: 0n,
  },
  {
    id: 3,
    c_boolean: null,
    c_tinyint: -128,
    c_smallint: -32768,
    c_integer: -2147483648,
    c_bigint: I64_MIN,
    c_uint256: 0n,
    c_int256: I256_MIN,
    c_real: Number.NEGATIVE_INFINITY,
    c_double: -1e308,
    c_decimal: '-0.0000000001',
    c_varchar: '😀 ünïcode',
    c_varbinary: bytes(0x00, 0xff),
    c_json: '"text"',
    c_date: '0001-01-01',
    c_time: '23:59:59.999999',
    c_timestamp: '2000-02-29 23:59:59.999999',
    c_timestamptz: new Date('2000-02-29T23:59:59.999Z'),
    c_timestamp_ms: new Date('2000-02-29T23:59:59.999Z'),
    c_timestamp_ns: '2000-02-29 23:59:59.999999999',
    c_interval: -93_784_567,
    c_interval_ym: -3,
    c_array: [null],
    c_array_rows: [null, { a: null, b: null }],
    c_map: new Map([['', -1n]]),
    c_row: { x: -1, nested: { y: null, z: [] } },
    c_uuid: 'ffffffff-ffff-ffff-ffff-ffffffffffff',
    c_hugeint: I128_MIN,
  },
  { ...NULLS, id: 4 },
];

/** The same values as Arrow stores them (see arrowCells.ts for how cells are read). */
const ARROW_ROWS = [
  {
    ...ROWS[0],
    c_uint256: '12345678901234567890',
    c_int256: '-5',
    c_decimal: 123456789012345678901234560123456789n,
    c_date: days('2026-11-20'),
    c_time: 36_930_123_456n,
    c_timestamp: ms('2026-11-20T10:15:30') * 1000n + 123_456n,
    c_timestamptz: ms('2026-11-20T10:15:30') * 1000n + 123_456n,
    c_timestamp_ms: ms('2026-11-20T10:15:30.123'),
    c_timestamp_ns: ms('2026-11-20T10:15:30') * 1_000_000n + 123_456_789n,
    c_interval: 93_784_567n,
    c_map: [
      ['k1', 1n],
      ['k2', null],
    ],
    c_hugeint: String(I128_MAX),
  },
  {
    ...ROWS[1],
    c_uint256: String(U256_MAX),
    c_int256: String(I256_MAX),
    c_decimal: 10n ** 38n - 1n,
    c_date: 0,
    c_time: 0n,
    c_timestamp: 0n,
    c_timestamptz: 0n,
    c_timestamp_ms: 0n,
    c_timestamp_ns: 0n,
    c_interval: 0n,
    c_map: [],
    c_hugeint: '0',
  },
  {
    ...ROWS[2],
    c_uint256: '0',
    c_int256: String(I256_MIN),
    c_decimal: -1n,
    c_date: days('0001-01-01'),
    c_time: 86_399_999_999n,
    c_timestamp: ms('2000-02-29T23:59:59') * 1000n + 999_999n,
    c_timestamptz: ms('2000-02-29T23:59:59') * 1000n + 999_999n,
    c_timestamp_ms: ms('2000-02-29T23:59:59.999'),
    c_timestamp_ns: ms('2000-02-29T23:59:59') * 1_000_000n + 999_999_999n,
    c_interval: -93_784_567n,
    c_map: [['', -1n]],
    c_hugeint: String(I128_MIN),
  },
  { ...NULLS, id: 4 },
];

describe('golden: sample.all_types through the pipeline', () => {
  it('JSON -> typed JS rows: every value exact, columns in column_names order', async () => {
    const s = stream(client, { sql: SQL }, { concurrency: 3 });
    const rows: Record<string, unknown>[] = [];
    for await (const row of s) rows.push(row);
    expect(rows).toEqual(ROWS);
    for (const row of rows) expect(Object.keys(row)).toEqual(Object.keys(COLUMN_TYPES));
    const info = await s.info();
    expect(Object.fromEntries(info.columns.map((c) => [c.name, c.type]))).toEqual(COLUMN_TYPES);
    expect(info.pageSize).toBe(2);
    expect(s.progress?.pages).toBe(2);
  });

  it('JSON -> Arrow: one schema, types from column_types, every stored value exact', async () => {
    const s = stream(client, { sql: SQL }, { concurrency: 2 });
    const schema = await s.schema();
    expect(Object.fromEntries(schema.fields.map((f) => [f.name, String(f.type)]))).toEqual(ARROW_TYPES);
    expect(Object.fromEntries(schema.fields.map((f) => [f.name, f.metadata.get('service.type')]))).toEqual(COLUMN_TYPES);
    expect(schema.metadata.get('service.execution_id')).toBe((await s.info()).executionId);
    expect(schema.metadata.get('service.ended_at')).toMatch(/^\d{4}-\d\d-\d\dT.*Z$/);

    const batches = [];
    for await (const batch of s.batches({ batchSize: 3 })) batches.push(batch);
    expect(batches.map((b) => b.numRows)).toEqual([3, 1]);
    for (const batch of batches) expect(batch.schema).toBe(schema);
    expect(batches.flatMap(arrowRows)).toEqual(ARROW_ROWS);
  });

  it('Arrow with int256As decimal256: a uint256 beyond 76 digits fails loudly, naming column and value', async () => {
    const s = stream(client, { sql: SQL }, { int256As: 'decimal256' });
    const schema = await s.schema();
    expect(schema.fields.find((f) => f.name === 'c_uint256')!.type).toMatchObject({ precision: 76, scale: 0, bitWidth: 256 });
    const run = async () => {
      for await (const _ of s.batches()) void _;
    };
    const error = await run().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ArrowValueError);
    expect((error as ArrowValueError).column).toBe('c_uint256');
    // Row id 2 is the result's second row.
    expect((error as ArrowValueError).rowOffset).toBe(1);
    expect((error as ArrowValueError).message).toContain(String(U256_MAX));
  });

  it('dates as Date objects when asked', async () => {
    const rows = [];
    for await (const row of stream(client, { sql: SQL }, { dates: 'date' })) rows.push(row['c_date']);
    expect(rows).toEqual([new Date('2026-11-20T00:00:00Z'), new Date('1970-01-01T00:00:00Z'), new Date('0001-01-01T00:00:00Z'), null]);
  });
});
