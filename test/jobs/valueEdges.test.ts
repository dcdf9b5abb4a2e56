// Value edges from the service's JSON through typed rows into every output format, read back by
// independent readers (DuckDB for Parquet, CSV and NDJSON; apache-arrow for Arrow IPC): each value
// must come back exactly.
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tableFromIPC } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceClient } from '../../src/client/index.ts';
import { parseJobFile } from '../../src/config/index.ts';
import { runJob } from '../../src/jobs/runJob.ts';
import { builtins } from '../../connectors/index.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { duck } from './duck.ts';

let svc: TestService;
let client: ServiceClient;
let dir: string;

beforeAll(async () => {
  svc = await startTestService({ sampleRows: 10 });
  client = new ServiceClient({ baseUrl: svc.url, apiKey: svc.keys.demo.admin, env: {} });
  dir = await mkdtemp(join(tmpdir(), 'sluice-edges-'));
});
afterAll(async () => {
  await client?.close();
  await svc?.close();
  await rm(dir, { recursive: true, force: true });
});

const SQL =
  "select 1 as id, TIME '24:00:00' as t_end, TIME '23:59:59.999999' as t_last, INTERVAL '1 day 02:03:04.567' as iv, INTERVAL '-00:00:00.001' as iv_neg, chr(65279) || 'bom' as s_bom";

const FORMATS = ['parquet', 'csv', 'ndjson', 'arrow'] as const;

const WIRES = ['json', 'arrow'] as const;

/** Exports the edge table to every format, the service's pages read over the given wire. */
async function exportAll(wire: (typeof WIRES)[number]): Promise<void> {
  const outputs = FORMATS.map((f) => `      - { format: ${f}, path: "\${DIR}/${wire}/${f}" }`).join('\n');
  const job = parseJobFile(`jobs:\n  - name: edges-${wire}\n    source: { sql: "${SQL.replaceAll('"', '\\"')}" }\n    wire: ${wire}\n    outputs:\n${outputs}\n`, { file: 'edges.yaml', registry: builtins, env: { DIR: dir } }).jobs[0]!;
  await runJob(job, { client, stateDir: join(dir, `state-${wire}`), signal: new AbortController().signal });
}

describe.each(WIRES)('value edges survive every format (wire %s)', (wire) => {
  beforeAll(() => exportAll(wire), 60_000);

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
    const [row] = await duck(select(`(select t_end, t_last, to_milliseconds(iv) as iv, to_milliseconds(iv_neg) as iv_neg, s_bom from read_csv('${f}', header = true, columns = {'id': 'INTEGER', 't_end': 'TIME', 't_last': 'TIME', 'iv': 'BIGINT', 'iv_neg': 'BIGINT', 's_bom': 'VARCHAR'}))`));
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
    const row = table.get(0)!.toJSON() as Record<string, unknown>;
    expect(row.t_end).toBe(86_400_000_000n);
    expect(row.t_last).toBe(86_399_999_999n);
    expect([row.iv, row.iv_neg].map(String)).toEqual(['93784567', '-1']);
    // apache-arrow's own string getter decodes with a BOM-dropping TextDecoder: read the bytes.
    const data = table.getChild('s_bom')!.data[0]!;
    const bytes = data.values.subarray(data.valueOffsets[0], data.valueOffsets[1]);
    expect(new TextDecoder('utf-8', { ignoreBOM: true }).decode(bytes)).toBe('\ufeffbom');
  });
});
