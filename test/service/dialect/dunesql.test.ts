// DuneSQL through the real service over HTTP: the dialect setting (service and team), the
// translation's errors located in the text the user sent, the sandbox judging what runs, and
// the Dune-shaped sample tables.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestService, type TestService } from '../../helpers/service.ts';
import { call, executeSql, waitFor } from '../api.ts';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ sqlDialect: 'dunesql', teamSqlDialect: { other: 'duckdb' }, duneSampleTransactions: 2000 });
});
afterAll(async () => {
  await svc.close();
});

interface Outcome {
  state: string;
  error?: { message: string; metadata?: { line?: number; column?: number } };
  rows: Record<string, unknown>[];
  types: string[];
}

async function run(sql: string, team: 'demo' | 'other' = 'demo'): Promise<Outcome> {
  const keys = svc.keys[team];
  const id = await executeSql(svc, sql, keys.write);
  const st = await waitFor(svc, id, undefined, keys.read);
  if (st.state !== 'QUERY_STATE_COMPLETED') return { state: st.state, error: st.error, rows: [], types: [] };
  const res = await call(svc, 'GET', `/v1/execution/${id}/results`, { key: keys.read });
  return { state: st.state, rows: res.json.result.rows, types: res.json.result.metadata.column_types };
}

describe('sql_dialect', () => {
  test('DuneSQL by default: 0x literals, VALUES without parentheses, integer division, Trino functions', async () => {
    const out = await run(
      "SELECT 0xdac17f958d2ee523a2206206994597c13d831ec7 AS a, 5 / 2 AS q, date_diff('day', DATE '2024-01-01', DATE '2024-03-01') AS d, (SELECT sum(x) FROM (VALUES 1, 2, 3) AS t(x)) AS s",
    );
    expect(out.state).toBe('QUERY_STATE_COMPLETED');
    expect(out.rows).toEqual([{ a: '0xdac17f958d2ee523a2206206994597c13d831ec7', q: 2, d: 60, s: 6 }]);
    expect(out.types).toEqual(['varbinary', 'integer', 'bigint', 'bigint']);
  });

  test("a team's sql_dialect overrides the service's: DuckDB SQL as written", async () => {
    const out = await run('SELECT 5 / 2 AS q', 'other');
    expect(out.rows).toEqual([{ q: 2.5 }]);
    // DuckDB reads 0x01 as the integer 0 named x01.
    const duck = await run('SELECT 0x01', 'other');
    expect(duck.rows).toEqual([{ x01: 0 }]);
  });
});

describe('saved queries and materialized views are DuneSQL too', () => {
  test('a saved query with a parameter, and a view of it that DuneSQL reads back', async () => {
    const sql = "SELECT symbol, varbinary_length(contract_address) AS bytes FROM tokens.erc20 WHERE contract_address = from_hex({{token}}) AND blockchain = 'ethereum'";
    const created = await call(svc, 'POST', '/v1/query', {
      key: svc.keys.demo.write,
      body: { name: 'usdt', query_sql: sql, parameters: [{ key: 'token', type: 'text', value: '0xdac17f958d2ee523a2206206994597c13d831ec7' }] },
    });
    expect(created.status, created.text).toBe(200);
    const id = created.json.query_id as number;
    const ran = await call(svc, 'POST', `/v1/query/${id}/execute`, { key: svc.keys.demo.write, body: {} });
    const st = await waitFor(svc, ran.json.execution_id);
    expect(st.state).toBe('QUERY_STATE_COMPLETED');
    const view = await call(svc, 'POST', '/v1/materialized-views', { key: svc.keys.demo.write, body: { name: 'result_usdt', query_id: id } });
    expect(view.status, view.text).toBe(200);
    expect((await waitFor(svc, view.json.execution_id)).state).toBe('QUERY_STATE_COMPLETED');
    const out = await run('SELECT symbol, bytes, 7 / 2 AS q FROM service.demo.result_usdt');
    expect(out.rows).toEqual([{ symbol: 'USDT', bytes: 20, q: 3 }]);
  });
});

describe('errors point at the SQL the user sent', () => {
  test('a binder error after translated tokens has the line:column of the user text', async () => {
    // The 0x literal and the renamed function make the translation longer than the text sent.
    const sql = "SELECT 0xdeadbeef AS a, approx_distinct(1),\n  nope_column FROM (VALUES 1) AS t(x)";
    const out = await run(sql);
    expect(out.state).toBe('QUERY_STATE_FAILED');
    expect(out.error?.metadata).toEqual({ line: 2, column: 3 });
    expect(out.error?.message).toMatch(/^line 2:3: .*nope_column/);
  });

  test('a sandbox denial after translated tokens is located in the user text', async () => {
    const sql = "SELECT 0xdeadbeef, read_text('/etc/passwd')";
    const out = await run(sql);
    expect(out.state).toBe('QUERY_STATE_FAILED');
    expect(out.error?.message).toMatch(/read_text/);
    expect(out.error?.metadata).toEqual({ line: 1, column: sql.indexOf('read_text') + 1 });
  });

  test('the translation opens no way around the sandbox: a function name inside a renamed call is still judged', async () => {
    const out = await run("SELECT any_match(ARRAY['a'], x -> length(read_text(x)) > 0)");
    expect(out.state).toBe('QUERY_STATE_FAILED');
    expect(out.error?.message).toMatch(/read_text/);
  });

  test('uint256 overflow is an error, as the real service says', async () => {
    const out = await run("SELECT CAST('115792089237316195423570985008687907853269984665640564039457584007913129639935' AS uint256) + CAST('1' AS uint256)");
    expect(out.state).toBe('QUERY_STATE_FAILED');
    expect(out.error?.message).toMatch(/uint256 overflow/);
  });
});

describe('Dune-shaped sample tables', () => {
  test('the real column names and types', async () => {
    const out = await run('SELECT hash, block_time, block_number, block_date, "from", "to", value, gas_used, success, data FROM ethereum.transactions LIMIT 1');
    expect(out.types).toEqual(['varbinary', 'timestamp(6) with time zone', 'bigint', 'date', 'varbinary', 'varbinary', 'uint256', 'bigint', 'boolean', 'varbinary']);
    const tr = await run('SELECT contract_address, evt_tx_hash, evt_block_time, "from", "to", value FROM erc20_ethereum.evt_Transfer LIMIT 1');
    expect(tr.types).toEqual(['varbinary', 'varbinary', 'timestamp(6) with time zone', 'varbinary', 'varbinary', 'uint256']);
  });

  test('a join of transfers, tokens and prices by minute returns rows', async () => {
    const out = await run(`
      SELECT t.symbol, date_trunc('hour', tr.evt_block_time) AS hour, count(*) AS transfers,
             sum(tr.value / power(10, t.decimals) * p.price) AS usd
      FROM erc20_ethereum.evt_Transfer tr
      JOIN tokens.erc20 t ON t.blockchain = 'ethereum' AND t.contract_address = tr.contract_address
      JOIN prices.usd p ON p.blockchain = 'ethereum' AND p.contract_address = tr.contract_address
        AND p.minute = date_trunc('minute', tr.evt_block_time)
      WHERE tr.contract_address = 0xdac17f958d2ee523a2206206994597c13d831ec7
      GROUP BY 1, 2 ORDER BY 2`);
    expect(out.state).toBe('QUERY_STATE_COMPLETED');
    expect(out.rows.length).toBeGreaterThan(0);
    expect(out.rows[0]).toMatchObject({ symbol: 'USDT' });
    expect(Number(out.rows[0]!['usd'])).toBeGreaterThan(0);
  });

  test("a transfer's calldata decodes to its value with Dune's varbinary functions", async () => {
    const out = await run(`
      SELECT count(*) AS n, count_if(varbinary_to_uint256(varbinary_substring(tx.data, 37, 32)) = tr.value) AS same,
             count_if(varbinary_ltrim(varbinary_substring(tx.data, 5, 32)) = tr."to") AS same_to
      FROM erc20_ethereum.evt_Transfer tr JOIN ethereum.transactions tx ON tx.hash = tr.evt_tx_hash`);
    const row = out.rows[0]!;
    expect(Number(row['n'])).toBeGreaterThan(100);
    expect(Number(row['same'])).toBe(Number(row['n']));
    expect(Number(row['same_to'])).toBe(Number(row['n']));
  });
});
