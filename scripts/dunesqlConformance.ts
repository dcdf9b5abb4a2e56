// The DuneSQL conformance matrix: runs every case of test/service/dialect/conformance.yaml
// through a local service over HTTP (dunesql, its Dune-shaped sample) and renders
// docs/dunesql.md's table of pass rates per family. `node scripts/dunesqlConformance.ts` (or
// `npm run docs`) writes the page; test/service/dialect/conformance.test.ts runs the same cases,
// checks each against its mark, and fails while the page on disk is not what the run renders.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { parse } from 'yaml';
import { startService, type ServiceHandle } from '../src/service/index.ts';

export interface ConformanceCase {
  family: string;
  sql: string;
  result?: unknown;
  type?: string;
  error?: string;
  unsupported?: string;
}

export interface CaseOutcome {
  case: ConformanceCase;
  passed: boolean;
  /** What came back, when it is not what the case expects. */
  got?: string;
}

export const CASES_FILE = fileURLToPath(new URL('../test/service/dialect/conformance.yaml', import.meta.url));
export const PAGE_FILE = fileURLToPath(new URL('../docs/dunesql.md', import.meta.url));

export async function loadCases(): Promise<ConformanceCase[]> {
  const doc = parse(await readFile(CASES_FILE, 'utf8')) as Record<string, Omit<ConformanceCase, 'family'>[]>;
  return Object.entries(doc).flatMap(([family, cases]) => cases.map((c) => ({ family, ...c })));
}

const KEY = 'sk_conformance_admin';

/** A service reading DuneSQL, over a temporary folder (removed by close). */
export async function conformanceService(): Promise<{ url: string; close(): Promise<void> }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-dunesql-'));
  let svc: ServiceHandle;
  try {
    svc = await startService({
      dataDir,
      sampleRows: 100,
      settings: {
        teams: [{ name: 'conformance', keys: [{ key: KEY, scopes: ['Admin'] }] }],
        sql_dialect: 'dunesql',
        dune_sample_transactions: 200,
      },
    });
  } catch (err) {
    await rm(dataDir, { recursive: true, force: true });
    throw err;
  }
  return {
    url: svc.url,
    async close() {
      await svc.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

async function api(url: string, method: 'GET' | 'POST', path: string, body?: unknown): Promise<any> {
  const res = await request(`${url}${path}`, {
    method,
    headers: { 'x-service-api-key': KEY, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`${method} ${path}: ${res.statusCode} ${text}`);
  return JSON.parse(text);
}

interface Answer {
  error?: string;
  value?: unknown;
  type?: string;
}

async function answer(url: string, sql: string): Promise<Answer> {
  const { execution_id: id } = await api(url, 'POST', '/v1/sql/execute', { sql });
  for (;;) {
    const st = await api(url, 'GET', `/v1/execution/${id}/status`);
    if (st.state === 'QUERY_STATE_FAILED') return { error: String(st.error?.message ?? 'failed') };
    if (st.is_execution_finished) break;
    await new Promise((r) => setTimeout(r, 5));
  }
  const res = await api(url, 'GET', `/v1/execution/${id}/results`);
  const meta = res.result.metadata;
  const name = meta.column_names[0] as string;
  return { value: res.result.rows[0]?.[name], type: meta.column_types[0] as string };
}

/** Values as the case file writes them: numbers numerically, arrays element by element. */
export function sameValue(got: unknown, want: unknown): boolean {
  if (want === null || want === undefined) return got === null || got === undefined;
  if (Array.isArray(want)) return Array.isArray(got) && got.length === want.length && want.every((w, i) => sameValue(got[i], w));
  if (typeof want === 'number') {
    const n = typeof got === 'number' ? got : typeof got === 'string' && got.trim() !== '' ? Number(got) : Number.NaN;
    return Math.abs(n - want) <= 1e-9 * Math.max(1, Math.abs(want));
  }
  if (typeof want === 'boolean') return got === want;
  if (typeof want === 'object') return JSON.stringify(got) === JSON.stringify(want);
  return typeof got === 'string' ? got === want : JSON.stringify(got) === want;
}

function judge(c: ConformanceCase, a: Answer): CaseOutcome {
  if (c.error !== undefined) {
    const passed = a.error !== undefined && a.error.toLowerCase().includes(c.error.toLowerCase());
    return passed ? { case: c, passed } : { case: c, passed, got: a.error ?? `no error: ${JSON.stringify(a.value)} (${a.type})` };
  }
  if (a.error !== undefined) return { case: c, passed: false, got: a.error };
  const passed = sameValue(a.value, c.result) && a.type === c.type;
  return passed ? { case: c, passed } : { case: c, passed, got: `${JSON.stringify(a.value)} (${a.type})` };
}

/** Runs the cases, a few at a time, in the file's order. */
export async function runConformance(url: string, cases: ConformanceCase[], concurrency = 6): Promise<CaseOutcome[]> {
  const out: CaseOutcome[] = new Array(cases.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < cases.length) {
      const i = next;
      next += 1;
      out[i] = judge(cases[i]!, await answer(url, cases[i]!.sql));
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return out;
}

function cell(text: string): string {
  return text.replaceAll('|', '\\|').replaceAll('\n', ' ');
}

export function conformancePage(outcomes: CaseOutcome[]): string {
  const families = [...new Set(outcomes.map((o) => o.case.family))];
  const rows = families.map((f) => {
    const of = outcomes.filter((o) => o.case.family === f);
    const passed = of.filter((o) => o.passed).length;
    return `| ${f} | ${passed} | ${of.length} | ${((100 * passed) / of.length).toFixed(0)}% |`;
  });
  const passed = outcomes.filter((o) => o.passed).length;
  const failing = outcomes.filter((o) => !o.passed);
  return [
    '# DuneSQL on the local service',
    '',
    '<!-- Generated by `npm run docs` (scripts/dunesqlConformance.ts) from test/service/dialect/conformance.yaml and a run of it; do not edit. -->',
    '',
    "The local service reads SQL as DuneSQL by default (`sql_dialect: dunesql`, per service and per team; `duckdb` runs DuckDB's own SQL as written). Each statement is translated to DuckDB SQL token by token (src/service/engine/dialect/): Trino's syntax (`0x` varbinary literals, `VALUES 1, 2`, `TIMESTAMP '... UTC'`, `INTERVAL '1' DAY`, lambdas, `UNNEST ... AS t(x)`, `try_cast`, quoted reserved words), Trino's functions with Trino's signatures (renamed to DuckDB's function of the same contract, or a macro), Dune's varbinary functions, `keccak` and exact `uint256` / `int256` arithmetic (native functions), and Trino's integer division. The sandbox then judges the DuckDB SQL that runs. Errors and denials point at the line and column of the text sent.",
    '',
    'The sample dataset holds Dune-shaped tables with the real column names and types: `ethereum.transactions`, `ethereum.logs`, `erc20_ethereum.evt_Transfer`, `tokens.erc20`, `prices.usd` (sized by `dune_sample_transactions`).',
    '',
    '## Conformance',
    '',
    `${outcomes.length} cases from the real service's documentation (Trino's functions and operators, Dune's varbinary functions and types), each with its documented result and result type: ${passed} pass (${((100 * passed) / outcomes.length).toFixed(1)}%).`,
    '',
    '| family | pass | cases | rate |',
    '|---|---|---|---|',
    ...rows,
    `| **all** | **${passed}** | **${outcomes.length}** | **${((100 * passed) / outcomes.length).toFixed(1)}%** |`,
    '',
    '## What differs, and why',
    '',
    '| family | statement | documented | here | why |',
    '|---|---|---|---|---|',
    ...failing.map((o) => {
      const want = o.case.error !== undefined ? `error: ${o.case.error}` : `${JSON.stringify(o.case.result)} (${o.case.type})`;
      return `| ${o.case.family} | \`${cell(o.case.sql)}\` | ${cell(want)} | ${cell(o.got ?? '')} | ${cell(o.case.unsupported ?? 'not yet known')} |`;
    }),
    '',
  ].join('\n');
}

/** Runs the matrix and writes the page. */
export async function writeConformancePage(): Promise<void> {
  const svc = await conformanceService();
  try {
    const outcomes = await runConformance(svc.url, await loadCases());
    await writeFile(PAGE_FILE, conformancePage(outcomes));
  } finally {
    await svc.close();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await writeConformancePage();
  console.log('wrote docs/dunesql.md');
}
