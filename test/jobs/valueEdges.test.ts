// Value edges from the service's JSON through typed rows into every output format, read back by
// independent readers (DuckDB for Parquet, CSV and NDJSON; apache-arrow for Arrow IPC; parquet-wasm
// and polars for Parquet and Arrow): each value must come back exactly.
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { type Table, tableFromIPC } from 'apache-arrow';
import pl from 'nodejs-polars';
import * as pw from 'parquet-wasm';
import { beforeAll, describe, expect, it } from 'vitest';
import { stream } from '../../src/pipeline/stream.ts';
import { parseJobFile } from '../../src/config/index.ts';
import { runJob } from '../../src/jobs/run/runJob.ts';
import { builtins } from '../../connectors/index.ts';
import { duck } from './duck.ts';
import { client, dir, useJobHarness } from './jobHarness.ts';

useJobHarness({ sampleRows: 10 }, 'sluice-edges-');

// The dates and timestamps at DuckDB's extremes, before year 1 and after 9999: every target holds them
// (Date32 and Parquet DATE are 32-bit days, timestamps 64-bit microseconds); CSV and NDJSON write them
// in the form DuckDB reads back (astronomical years, `-` before year 0, no `+`), not ISO's `+010000`.
const DATES = {
  d_bc: "DATE '0044-03-15 (BC)'",
  d_1bc: "DATE '0001-12-31 (BC)'",
  d_big: "DATE '10000-01-01'",
  d_min: "DATE '5877642-06-25 (BC)'",
  d_max: "DATE '5881580-07-10'",
  ts_bc: "TIMESTAMP '0044-03-15 (BC) 12:30:00.000001'",
  ts_big: "TIMESTAMP '10000-01-01 23:59:59.999999'",
  ts_min: "TIMESTAMP '290309-12-22 (BC) 00:00:00'",
  ts_max: "TIMESTAMP '294247-01-10 04:00:54.775806'",
  tz_big: "TIMESTAMPTZ '10000-01-02 00:00:00+00'",
  tz_bc: "TIMESTAMPTZ '0001-12-31 (BC) 23:00:00+00'",
  tz_max: "TIMESTAMPTZ '280000-01-01 00:00:00.000001+00'",
} as const;
type DateColumn = keyof typeof DATES;
const DATE_COLUMNS = Object.keys(DATES) as DateColumn[];
const isDate = (c: DateColumn) => c.startsWith('d_');
const duckType = (c: DateColumn) => (isDate(c) ? 'DATE' : c.startsWith('tz_') ? 'TIMESTAMPTZ' : 'TIMESTAMP');

const SQL =
  "select 1 as id, TIME '24:00:00' as t_end, TIME '23:59:59.999999' as t_last, INTERVAL '1 day 02:03:04.567' as iv, INTERVAL '-00:00:00.001' as iv_neg, chr(65279) || 'bom' as s_bom, " +
  Object.entries(DATES).map(([name, value]) => `${value} as ${name}`).join(', ');

/** Days since 1970 of each date column and microseconds since 1970 of each timestamp, as DuckDB computes them. */
const exact = (source: string) =>
  `select ${DATE_COLUMNS.map((c) => (isDate(c) ? `(${c} - DATE '1970-01-01')::VARCHAR as ${c}` : `epoch_us(${c})::VARCHAR as ${c}`)).join(', ')} from ${source}`;
async function collect<T>(rows: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const row of rows) out.push(row);
  return out;
}
let expectedDates: Record<string, unknown> | undefined;

const FORMATS = ['parquet', 'csv', 'ndjson', 'arrow'] as const;

const WIRES = ['json', 'arrow'] as const;

/** Exports the edge table to every format, the service's pages read over the given wire. */
async function exportAll(wire: (typeof WIRES)[number]): Promise<void> {
  const outputs = FORMATS.map((f) => `      - { format: ${f}, path: "\${DIR}/${wire}/${f}" }`).join('\n');
  const job = parseJobFile(`jobs:\n  - name: edges-${wire}\n    source: { sql: "${SQL.replaceAll('"', '\\"')}" }\n    wire: ${wire}\n    outputs:\n${outputs}\n`, { file: 'edges.yaml', registry: builtins, env: { DIR: dir } }).jobs[0]!;
  await runJob(job, { client, stateDir: join(dir, `state-${wire}`), signal: new AbortController().signal });
}

describe.each(WIRES)('value edges survive every format (wire %s)', (wire) => {
  beforeAll(async () => {
    await exportAll(wire);
    [expectedDates] = await duck(exact(`(${SQL})`));
  }, 60_000);

  async function filesOf(format: string): Promise<string[]> {
    const at = join(dir, wire, format);
    return (await readdir(at)).filter((f) => !f.startsWith('_') && !f.startsWith('.')).map((f) => join(at, f));
  }

  // Exact now: the end of the day, microseconds of a time, a millisecond interval either side of
  // zero, and a string that begins with U+FEFF (a text decoder drops it as a byte order mark, the
  // DuckDB binding's too: compared inside DuckDB).
  const expected = { t_end: '24:00:00', t_last: '23:59:59.999999', iv_ms: '93784567', iv_neg_ms: '-1', s_bom: true };
  const select = (source: string) =>
    `select t_end::VARCHAR as t_end, t_last::VARCHAR as t_last, (epoch_us(iv) // 1000)::VARCHAR as iv_ms, (epoch_us(iv_neg) // 1000)::VARCHAR as iv_neg_ms, s_bom = chr(65279) || 'bom' as s_bom from ${source}`;

  it('parquet, read back by DuckDB', async () => {
    const [f] = await filesOf('parquet');
    const [row] = await duck(`select t_end::VARCHAR as t_end, t_last::VARCHAR as t_last, (epoch_us(iv) // 1000)::VARCHAR as iv_ms, (epoch_us(iv_neg) // 1000)::VARCHAR as iv_neg_ms, s_bom = chr(65279) || 'bom' as s_bom from (select t_end, t_last, to_milliseconds(iv) as iv, to_milliseconds(iv_neg) as iv_neg, s_bom from read_parquet('${f}'))`);
    expect(row).toEqual(expected);
  });

  it('csv, read back by DuckDB', async () => {
    const [f] = await filesOf('csv');
    const [row] = await duck(select(`(select t_end, t_last, to_milliseconds(iv) as iv, to_milliseconds(iv_neg) as iv_neg, s_bom from read_csv('${f}', header = true, columns = {'id': 'INTEGER', 't_end': 'TIME', 't_last': 'TIME', 'iv': 'BIGINT', 'iv_neg': 'BIGINT', 's_bom': 'VARCHAR', ${DATE_COLUMNS.map((c) => `'${c}': 'VARCHAR'`).join(', ')}}))`));
    expect(row).toEqual(expected);
  });

  it('ndjson, read back by DuckDB', async () => {
    const [f] = await filesOf('ndjson');
    const text = await readFile(f!, 'utf8');
    const [row] = await duck(select(`(select t_end::TIME as t_end, t_last::TIME as t_last, to_milliseconds(iv::BIGINT) as iv, to_milliseconds(iv_neg::BIGINT) as iv_neg, s_bom from read_json('${f}', format = 'newline_delimited', columns = {'id': 'INTEGER', 't_end': 'VARCHAR', 't_last': 'VARCHAR', 'iv': 'VARCHAR', 'iv_neg': 'VARCHAR', 's_bom': 'VARCHAR'}))`));
    expect(row, text).toEqual(expected);
  });

  it('arrow, read back by apache-arrow', async () => {
    const [f] = await filesOf('arrow');
    const table = tableFromIPC(await readFile(f!));
    // Column by column: apache-arrow's row getter turns every timestamp into a number and throws at the extremes.
    const row = Object.fromEntries(['t_end', 't_last', 'iv', 'iv_neg'].map((c) => [c, table.getChild(c)!.get(0) as unknown]));
    expect(row.t_end).toBe(86_400_000_000n);
    expect(row.t_last).toBe(86_399_999_999n);
    expect([row.iv, row.iv_neg].map(String)).toEqual(['93784567', '-1']);
    // apache-arrow's own string getter decodes with a BOM-dropping TextDecoder: read the bytes.
    const data = table.getChild('s_bom')!.data[0]!;
    const bytes = data.values.subarray(data.valueOffsets[0], data.valueOffsets[1]);
    expect(new TextDecoder('utf-8', { ignoreBOM: true }).decode(bytes)).toBe('\ufeffbom');
  });

  it('dates and timestamps before year 1, after 9999 and at the extremes: parquet and csv and ndjson read back by DuckDB', async () => {
    const [parquetFile] = await filesOf('parquet');
    expect((await duck(exact(`read_parquet('${parquetFile}')`)))[0]).toEqual(expectedDates);
    const typed = `{${DATE_COLUMNS.map((c) => `'${c}': '${duckType(c)}'`).join(', ')}}`;
    const [csvFile] = await filesOf('csv');
    expect((await duck(exact(`read_csv('${csvFile}', header = true, columns = {'id': 'INTEGER', 't_end': 'VARCHAR', 't_last': 'VARCHAR', 'iv': 'VARCHAR', 'iv_neg': 'VARCHAR', 's_bom': 'VARCHAR', ${typed.slice(1)})`)))[0], await readFile(csvFile!, 'utf8')).toEqual(expectedDates);
    const [ndjsonFile] = await filesOf('ndjson');
    expect((await duck(exact(`read_json('${ndjsonFile}', format = 'newline_delimited', columns = ${typed})`)))[0], await readFile(ndjsonFile!, 'utf8')).toEqual(expectedDates);
  });

  it('dates and timestamps at the extremes: arrow read by apache-arrow, parquet by parquet-wasm, both by polars', async () => {
    const raw = (table: Table) =>
      Object.fromEntries(DATE_COLUMNS.map((c) => [c, String(table.getChild(c)!.data[0]!.values[0])]));
    const [arrowFile] = await filesOf('arrow');
    const arrowTable = tableFromIPC(await readFile(arrowFile!));
    expect(raw(arrowTable)).toEqual(expectedDates);
    const [parquetFile] = await filesOf('parquet');
    const wasmTable = pw.readParquet(await readFile(parquetFile!));
    expect(raw(tableFromIPC(wasmTable.intoIPCStream()))).toEqual(expectedDates);
    for (const frame of [pl.readParquet(parquetFile!), pl.readIPCStream(await readFile(arrowFile!))]) {
      const polars = Object.fromEntries(DATE_COLUMNS.map((c) => [c, String(frame.getColumn(c).cast(isDate(c) ? pl.Int32 : pl.Int64).cast(pl.Utf8).toArray()[0])]));
      expect(polars).toEqual(expectedDates);
    }
  });

  it('typed rows: dates and exact timestamps as canonical text (DuckDB reads it back), timestamps beyond a JS Date refused with column, row and value', async () => {
    const dates = DATE_COLUMNS.filter(isDate);
    const [row] = await collect(stream(client, { sql: `select ${dates.map((c) => `${DATES[c]} as ${c}`).join(', ')}` }, { wire }));
    expect(row).toEqual({ d_bc: '-0043-03-15', d_1bc: '0000-12-31', d_big: '10000-01-01', d_min: '-5877641-06-25', d_max: '5881580-07-10' });
    const back = await duck(`select ${dates.map((c) => `('${String(row![c])}'::DATE - DATE '1970-01-01')::VARCHAR as ${c}`).join(', ')}`);
    expect(back[0]).toEqual(Object.fromEntries(dates.map((c) => [c, expectedDates![c]])));
    const [exact] = await collect(stream(client, { sql: `select ${DATES.ts_bc} as ts_bc, ${DATES.ts_min} as ts_min, ${DATES.ts_max} as ts_max` }, { wire }));
    expect(exact).toEqual({ ts_bc: '-0043-03-15 12:30:00.000001', ts_min: '-290308-12-22 00:00:00.000000', ts_max: '294247-01-10 04:00:54.775806' });
    await expect(collect(stream(client, { sql: `select 1 as id, ${DATES.tz_max} as tz_max` }, { wire }))).rejects.toThrow(
      /column "tz_max".*row 0.*280000-01-01.*outside the range of a JS Date/s,
    );
    await expect(collect(stream(client, { sql: `select ${DATES.d_max} as d_max` }, { wire, dates: 'date' }))).rejects.toThrow(
      /column "d_max".*row 0.*5881580-07-10.*outside the range of a JS Date/s,
    );
  });
});

describe('values no target can hold exactly', () => {
  it.each([
    ['iv_us', "INTERVAL '00:00:00.000001'", /column "iv_us".*row 1.*00:00:00\.000001.*microseconds/s],
    ['iv_months', "INTERVAL '14 months 3 days'", /column "iv_months".*row 1.*14 months.*month part/s],
    ['d_inf', "'infinity'::DATE", /column "d_inf".*row 1.*infinity.*not a valid date/s],
  ])('%s fails the export loudly with column, row and value, and leaves no output behind', async (name, value, message) => {
    const path = join(dir, 'refused', name);
    const sql = `select * from (values (1, NULL), (2, ${value})) t(id, ${name})`;
    const job = parseJobFile(`jobs:\n  - name: refused-${name}\n    source: { sql: "${sql.replaceAll('"', '\\"')}" }\n    outputs:\n      - { format: parquet, path: "${path}" }\n`, { file: 'refused.yaml', registry: builtins, env: {} }).jobs[0]!;
    await expect(runJob(job, { client, stateDir: join(dir, `state-refused-${name}`), signal: new AbortController().signal })).rejects.toThrow(message);
    // Neither the output nor a staging directory beside it.
    expect((await readdir(join(dir, 'refused')).catch(() => [] as string[])).filter((f) => f.includes(name))).toEqual([]);
  });
});
