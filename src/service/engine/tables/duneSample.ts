// Dune-shaped sample tables: ethereum.transactions, ethereum.logs, erc20_ethereum.evt_Transfer,
// tokens.erc20 and prices.usd, with the real tables' column names and types, generated
// deterministically from `transactions` (the size setting): addresses that repeat (a few
// hundred, some far busier than others), ERC-20 transfers of real token contracts (each with
// its transaction's calldata and its Transfer log), and a price per token per minute over the
// whole span, so joining transfers, tokens and prices by minute finds rows. Hashes are SHA-256
// of a label (not real chain data); 20 transactions per block, a block every 12 seconds.
import type { DuckDBConnection } from '@duckdb/node-api';

/** Tokens of the sample: real Ethereum mainnet contracts, their decimals and a base price in USD. */
export const SAMPLE_TOKENS: readonly { address: string; symbol: string; decimals: number; price: number }[] = [
  { address: 'dac17f958d2ee523a2206206994597c13d831ec7', symbol: 'USDT', decimals: 6, price: 1 },
  { address: 'a0b86991c6218b36c1d19d4a2e9eb0ce3606eb48', symbol: 'USDC', decimals: 6, price: 1 },
  { address: 'c02aaa39b223fe8d0a0e5c4f27ead9083c756cc2', symbol: 'WETH', decimals: 18, price: 2300 },
  { address: '6b175474e89094c44da98b954eedeac495271d0f', symbol: 'DAI', decimals: 18, price: 1 },
  { address: '2260fac5e5542a773aa44fbcfedf7c193bc2c599', symbol: 'WBTC', decimals: 8, price: 42000 },
  { address: '514910771af9ca656af840dff83e8264ecf986ca', symbol: 'LINK', decimals: 18, price: 15 },
  { address: '1f9840a85d5af5bf1d1762f925bdaddc4201f984', symbol: 'UNI', decimals: 18, price: 6 },
];

export const DEFAULT_DUNE_SAMPLE_TRANSACTIONS = 10_000;
const TX_PER_BLOCK = 20;
const START = "TIMESTAMPTZ '2024-01-01 00:00:00+00'";
const TRANSFER_TOPIC = 'ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';

function tokensValues(): string {
  return SAMPLE_TOKENS.map(
    (t, k) => `(${k}, unhex('${t.address}'), '${t.symbol}', ${t.decimals}, ${t.price}::DOUBLE)`,
  ).join(', ');
}

/** One row per transaction `i` (a token transfer when i % 5 < 3: six in ten), its parties and amount. */
function transactionRowsSql(n: number): string {
  const addresses = Math.max(50, Math.trunc(n / 40));
  // An address index skewed toward small numbers: a few busy addresses, a long tail.
  const addr = (seed: string): string => `unhex(substr(sha256('addr' || ((${seed}) * (${seed}) % ${addresses})::VARCHAR), 1, 40))`;
  const tokens = SAMPLE_TOKENS.length;
  return `CREATE OR REPLACE TEMP TABLE dune_sample_tx AS
     SELECT i, i // ${TX_PER_BLOCK} AS b, i % 5 < 3 AS is_token, (i * 7 + i // 11) % ${tokens} AS k,
       ${addr('i * 7919 + 13')} AS sender, ${addr('i * 104729 + 7')} AS receiver,
       ((i * 2654435761) % 100000 + 1)::HUGEINT AS units
     FROM range(${n}) t(i)`;
}

function transactionsSql(): string {
  return `CREATE OR REPLACE TABLE ethereum.transactions AS
     SELECT
       ${START} + to_seconds(b * 12) AS block_time,
       (19000000 + b)::BIGINT AS block_number,
       (CASE WHEN is_token THEN 0::HUGEINT ELSE units * 10000000000000::HUGEINT END)::BIGNUM::uint256 AS value,
       (CASE WHEN is_token THEN 65000 ELSE 21000 END)::BIGINT AS gas_limit,
       (20000000000 + (i * 7919) % 5000000000)::BIGINT AS gas_price,
       (CASE WHEN is_token THEN 45000 + i % 12000 ELSE 21000 END)::BIGINT AS gas_used,
       (30000000000)::BIGINT AS max_fee_per_gas,
       (1000000000 + (i % 7) * 100000000)::BIGINT AS max_priority_fee_per_gas,
       (1000000000 + (i % 7) * 100000000)::BIGINT AS priority_fee_per_gas,
       (i // 50)::BIGINT AS nonce,
       (i % ${TX_PER_BLOCK})::BIGINT AS "index",
       i % 97 <> 0 AS success,
       sender AS "from",
       CASE WHEN is_token THEN tok.address ELSE receiver END AS "to",
       unhex(sha256('block' || b::VARCHAR)) AS block_hash,
       CASE WHEN is_token THEN unhex('a9059cbb' || lpad(hex(receiver), 64, '0') || lpad(hex(units * pow(10, tok.decimals - 2)::HUGEINT), 64, '0'))
            ELSE ''::BLOB END AS data,
       unhex(sha256('tx' || i::VARCHAR)) AS hash,
       'DynamicFee' AS type,
       (${START} + to_seconds(b * 12))::DATE AS block_date
     FROM dune_sample_tx JOIN dune_sample_tokens tok USING (k) ORDER BY i`;
}

function transfersSql(): string {
  return `CREATE OR REPLACE TABLE erc20_ethereum.evt_Transfer AS
     SELECT
       tok.address AS contract_address,
       unhex(sha256('tx' || i::VARCHAR)) AS evt_tx_hash,
       sender AS evt_tx_from,
       tok.address AS evt_tx_to,
       0::BIGINT AS evt_index,
       ${START} + to_seconds(b * 12) AS evt_block_time,
       (19000000 + b)::BIGINT AS evt_block_number,
       (${START} + to_seconds(b * 12))::DATE AS evt_block_date,
       sender AS "from",
       receiver AS "to",
       (units * pow(10, tok.decimals - 2)::HUGEINT)::BIGNUM::uint256 AS value
     FROM dune_sample_tx JOIN dune_sample_tokens tok USING (k) WHERE is_token AND i % 97 <> 0 ORDER BY i`;
}

function logsSql(): string {
  return `CREATE OR REPLACE TABLE ethereum.logs AS
     SELECT
       ${START} + to_seconds(b * 12) AS block_time,
       (19000000 + b)::BIGINT AS block_number,
       unhex(sha256('block' || b::VARCHAR)) AS block_hash,
       tok.address AS contract_address,
       unhex('${TRANSFER_TOPIC}') AS topic0,
       unhex(lpad(hex(sender), 64, '0')) AS topic1,
       unhex(lpad(hex(receiver), 64, '0')) AS topic2,
       NULL::BLOB AS topic3,
       unhex(lpad(hex(units * pow(10, tok.decimals - 2)::HUGEINT), 64, '0')) AS data,
       unhex(sha256('tx' || i::VARCHAR)) AS tx_hash,
       0::BIGINT AS "index",
       (i % ${TX_PER_BLOCK})::BIGINT AS tx_index,
       (${START} + to_seconds(b * 12))::DATE AS block_date,
       sender AS tx_from,
       tok.address AS tx_to
     FROM dune_sample_tx JOIN dune_sample_tokens tok USING (k) WHERE is_token AND i % 97 <> 0 ORDER BY i`;
}

function pricesSql(minutes: number): string {
  return `CREATE OR REPLACE TABLE prices.usd AS
     SELECT
       ${START} + to_minutes(m) AS minute,
       'ethereum' AS blockchain,
       address AS contract_address,
       decimals::INTEGER AS decimals,
       symbol,
       round(price * (1 + CASE WHEN price = 1 THEN 0.001 ELSE 0.02 END * sin(m / 37.0 + k)), 6) AS price
     FROM dune_sample_tokens, range(${minutes}) r(m) ORDER BY m, k`;
}

/** Statements (re)creating the tables for `transactions` transactions. */
export function duneSampleStatements(transactions: number): string[] {
  const n = Math.max(0, Math.trunc(transactions));
  const blocks = Math.ceil(n / TX_PER_BLOCK) + 1;
  const minutes = Math.ceil((blocks * 12) / 60) + 1;
  return [
    'CREATE SCHEMA IF NOT EXISTS ethereum',
    'CREATE SCHEMA IF NOT EXISTS erc20_ethereum',
    'CREATE SCHEMA IF NOT EXISTS tokens',
    'CREATE SCHEMA IF NOT EXISTS prices',
    `CREATE OR REPLACE TEMP TABLE dune_sample_tokens AS SELECT * FROM (VALUES ${tokensValues()}) t(k, address, symbol, decimals, price)`,
    `CREATE OR REPLACE TABLE tokens.erc20 AS
     SELECT 'ethereum' AS blockchain, address AS contract_address, symbol, decimals::INTEGER AS decimals
     FROM dune_sample_tokens ORDER BY k`,
    transactionRowsSql(n),
    transactionsSql(),
    transfersSql(),
    logsSql(),
    pricesSql(minutes),
    'DROP TABLE dune_sample_tx',
    'DROP TABLE dune_sample_tokens',
  ];
}

/**
 * Creates the tables when missing, or again when `transactions` asks for another size (an
 * existing set is kept whatever its size when no size is asked).
 */
export async function loadDuneSample(conn: DuckDBConnection, transactions: number | undefined): Promise<void> {
  const existing = await conn.runAndReadAll(
    "SELECT count(*)::INTEGER FROM duckdb_tables() WHERE database_name = current_database() AND (schema_name, table_name) IN (('ethereum', 'transactions'), ('ethereum', 'logs'), ('erc20_ethereum', 'evt_Transfer'), ('tokens', 'erc20'), ('prices', 'usd'))",
  );
  let ok = Number(existing.getRowsJson()[0]?.[0]) === 5;
  if (ok && transactions !== undefined) {
    const count = await conn.runAndReadAll('SELECT count(*)::BIGINT FROM ethereum.transactions');
    ok = Number(count.getRowsJson()[0]?.[0]) === Math.max(0, Math.trunc(transactions));
  }
  if (ok) return;
  for (const stmt of duneSampleStatements(transactions ?? DEFAULT_DUNE_SAMPLE_TRANSACTIONS)) await conn.run(stmt);
  // Written to the database file now: blocks only in the write-ahead log stay in memory, and the
  // engine's memory trims (memory/memoryTrim.ts) could not evict them.
  await conn.run('CHECKPOINT');
}
