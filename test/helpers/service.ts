// Starts the real local query service for a test: temp data directory, a small sample dataset,
// two teams (demo, other) with a key of each scope. Use it from any test that needs a service:
//
//   const svc = await startTestService();            // or startTestService({ limits: { page_rows: 10 } })
//   afterAll(() => svc.close());                      // stops the service and deletes its data dir
//   fetch(`${svc.url}/v1/sql/execute`, { method: 'POST', headers: { 'X-Service-Api-Key': svc.keys.demo.write }, ... })
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startService, type ServiceHandle } from '../../src/service/index.ts';
import type { ServiceSettingsInput } from '../../src/service/settings.ts';
import type { Clock } from '../../src/service/clock.ts';

export interface TeamKeys {
  admin: string;
  write: string;
  read: string;
}

export interface TestServiceOverrides {
  /** Merged into the test limits (e.g. `{ page_rows: 10 }`). */
  limits?: ServiceSettingsInput['limits'];
  faults?: ServiceSettingsInput['faults'];
  tiers?: ServiceSettingsInput['tiers'];
  /** max_inflight of both teams (default 3). */
  maxInflight?: number;
  /** credits_per_cycle of both teams (default 10,000). */
  creditsPerCycle?: number;
  /** Reuse a data directory (restart tests); it is then not deleted by close(). */
  dataDir?: string;
  /** Rows of sample.events (default 2000). */
  sampleRows?: number;
  clock?: Clock;
  /** Results of at least this many bytes get pre-encoded pages (the service's default unless given). */
  encodeMinBytes?: number;
  /** The settings' `engine` block (the defaults unless given). */
  engine?: ServiceSettingsInput['engine'];
  /**
   * engine.walled_teams (default: on, as the service's default). Only a fixture that does not test
   * tenancy turns it off, saying so: each team's DuckDB instance opened at start costs a test
   * service about 0.4 s and 130 ms of CPU more.
   */
  walledTeams?: boolean;
  /** The SQL dialect of both teams: duckdb unless given (the tests' SQL is DuckDB's; the service's default is dunesql). */
  sqlDialect?: 'dunesql' | 'duckdb';
  /** A team's own sql_dialect (overrides sqlDialect for that team). */
  teamSqlDialect?: Partial<Record<'demo' | 'other', 'dunesql' | 'duckdb'>>;
  /** Transactions of the Dune-shaped sample tables (default 200). */
  duneSampleTransactions?: number;
}

export interface TestService extends ServiceHandle {
  keys: { demo: TeamKeys; other: TeamKeys };
  dataDir: string;
  /** Stops the service; deletes the data directory unless it was passed in. */
  close(): Promise<void>;
}

export const TEST_KEYS = {
  demo: { admin: 'sk_demo_admin', write: 'sk_demo_write', read: 'sk_demo_read' },
  other: { admin: 'sk_other_admin', write: 'sk_other_write', read: 'sk_other_read' },
} as const satisfies Record<string, TeamKeys>;

export function testSettings(overrides: TestServiceOverrides = {}): ServiceSettingsInput {
  const team = (name: 'demo' | 'other') => ({
    name,
    plan: { credits_per_cycle: overrides.creditsPerCycle ?? 10_000, max_inflight: overrides.maxInflight ?? 3, storage_quota_bytes: 1_048_576 },
    keys: [
      { key: TEST_KEYS[name].admin, scopes: ['Admin' as const] },
      { key: TEST_KEYS[name].write, scopes: ['Write' as const] },
      { key: TEST_KEYS[name].read, scopes: ['Read' as const] },
    ],
    ...(overrides.teamSqlDialect?.[name] === undefined ? {} : { sql_dialect: overrides.teamSqlDialect[name] }),
  });
  return {
    teams: [team('demo'), team('other')],
    limits: { sweep_interval_ms: 3_600_000, ...overrides.limits },
    faults: { retry_after_seconds: 0, ...overrides.faults },
    ...(overrides.tiers === undefined ? {} : { tiers: overrides.tiers }),
    ...(overrides.engine === undefined && overrides.walledTeams === undefined ? {} : { engine: { ...overrides.engine, ...(overrides.walledTeams === undefined ? {} : { walled_teams: overrides.walledTeams }) } }),
    datasets: ['sample'],
    sql_dialect: overrides.sqlDialect ?? 'duckdb',
    dune_sample_transactions: overrides.duneSampleTransactions ?? 200,
  };
}

export async function startTestService(overrides: TestServiceOverrides = {}): Promise<TestService> {
  const ownDir = overrides.dataDir === undefined;
  const dataDir = overrides.dataDir ?? (await mkdtemp(join(tmpdir(), 'sluice-service-')));
  let handle: ServiceHandle;
  try {
    handle = await startService({
      dataDir,
      sampleRows: overrides.sampleRows ?? 2000,
      settings: testSettings(overrides),
      ...(overrides.clock === undefined ? {} : { clock: overrides.clock }),
      ...(overrides.encodeMinBytes === undefined ? {} : { encodeMinBytes: overrides.encodeMinBytes }),
    });
  } catch (err) {
    if (ownDir) await rm(dataDir, { recursive: true, force: true });
    throw err;
  }
  const stop = handle.close;
  const close = async () => {
    await stop();
    if (ownDir) await rm(dataDir, { recursive: true, force: true });
  };
  return Object.assign(handle, { keys: TEST_KEYS, dataDir, close });
}
