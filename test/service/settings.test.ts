import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exitCodeOf, EXIT } from '../../src/cli/exitCodes.ts';
import { SluiceError } from '../../src/errors.ts';
import { SettingsError, defaultSettings, loadSettingsFile, loadSettingsOver, parseSettings, readSettingsFile, resolveTier } from '../../src/service/settings.ts';
import { startService } from '../../src/service/index.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-settings-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const ISSUE_YAML = `
teams:
  - name: demo
    plan: { credits_per_cycle: 10000, max_inflight: 3, storage_quota_bytes: 1048576 }
    keys:
      - { key: "sk_demo_admin", scopes: [Admin] }
      - { key: "sk_demo_read", scopes: [Read] }
limits: { page_rows: 32000, datapoints_per_request: 250000, retention_days: 90 }
faults: { latency_ms: 0, error_rate: 0, reset_rate: 0 }
datasets: [sample]
`;

describe('service settings', () => {
  it('loads the YAML of the issue with defaults for the rest', async () => {
    const path = join(dir, 'ok.yaml');
    await writeFile(path, ISSUE_YAML);
    const s = await loadSettingsFile(path);
    expect(s.teams[0]?.keys.map((k) => k.key)).toEqual(['sk_demo_admin', 'sk_demo_read']);
    expect(s.limits).toMatchObject({ page_rows: 32000, max_result_bytes: 8 * 1024 ** 3, execution_timeout_ms: 1_800_000, max_body_bytes: 10 * 1024 ** 2 });
    expect(s.faults).toMatchObject({ error_statuses: [500, 429], retry_after_seconds: 1 });
    expect(resolveTier(s, 'medium')).toEqual({ threads: 1, cost_factor: 1, timeout_ms: 1_800_000, memory_limit_bytes: 1024 ** 3, temp_limit_bytes: 4 * 1024 ** 3 });
    expect(resolveTier(s, 'large')).toEqual({ threads: 2, cost_factor: 2, timeout_ms: 1_800_000, memory_limit_bytes: 2 * 1024 ** 3, temp_limit_bytes: 8 * 1024 ** 3 });
  });

  it("takes the tiers' memory and temporary-disk bounds as docs/local-service.md writes them", async () => {
    const path = join(dir, 'tiers.yaml');
    await writeFile(path, `${ISSUE_YAML}tiers:\n  medium: { memory_limit_bytes: 1073741824, temp_limit_bytes: 4294967296 }\n  large: { memory_limit_bytes: 268435456, temp_limit_bytes: 1073741824 }\n`);
    const s = await loadSettingsFile(path);
    expect(resolveTier(s, 'large')).toMatchObject({ memory_limit_bytes: 256 * 1024 ** 2, temp_limit_bytes: 1024 ** 3 });
    await writeFile(path, `${ISSUE_YAML}tiers:\n  medium: { memory_limit_bytes: 0 }\n`);
    expect((await loadSettingsFile(path).then(() => new Error('no error'), (e: unknown) => e as Error)).message).toContain('tiers.medium.memory_limit_bytes');
  });

  it('names the YAML path of every error', async () => {
    const path = join(dir, 'bad.yaml');
    await writeFile(path, ISSUE_YAML.replace('[Read]', '[Reader]').replace('page_rows: 32000', 'page_rows: -1, pages: 3'));
    const err = await loadSettingsFile(path).then(() => new Error('no error'), (e: unknown) => e as Error);
    expect(err).toBeInstanceOf(SettingsError);
    expect(err.message).toContain(path);
    expect(err.message).toContain('teams[0].keys[1].scopes[0]');
    expect(err.message).toContain('limits.page_rows');
    expect(err.message).toMatch(/limits: .*"pages"/);
  });

  it('reads sql_dialect for the service and per team (dunesql by default) and names a bad one', () => {
    const team = (name: string, key: string, extra: object = {}) => ({ name, keys: [{ key, scopes: ['Read'] }], ...extra });
    const s = parseSettings({ teams: [team('a', 'sk_1234567'), team('b', 'sk_7654321', { sql_dialect: 'duckdb' })] });
    expect([s.sql_dialect, s.teams[0]!.sql_dialect, s.teams[1]!.sql_dialect]).toEqual(['dunesql', undefined, 'duckdb']);
    expect(() => parseSettings({ teams: [team('a', 'sk_1234567')], sql_dialect: 'trino' })).toThrow(/sql_dialect.*"dunesql"\|"duckdb"|sql_dialect: .*dunesql/);
    expect(() => parseSettings({ teams: [team('a', 'sk_1234567', { sql_dialect: 'presto' })] })).toThrow(/teams\[0\]\.sql_dialect/);
  });

  it('refuses duplicate keys and team names, bad team names, unreadable files', async () => {
    const team = (name: string, key: string) => ({ name, keys: [{ key, scopes: ['Read'] }] });
    expect(() => parseSettings({ teams: [team('a', 'sk_1234567'), team('b', 'sk_1234567')] })).toThrow(/teams\[1\]\.keys\[0\]\.key: duplicate API key/);
    expect(() => parseSettings({ teams: [team('a', 'sk_1234567'), team('a', 'sk_7654321')] })).toThrow(/teams\[1\]\.name: duplicate team name/);
    expect(() => parseSettings({ teams: [team('Bad-Name', 'sk_1234567')] })).toThrow(/teams\[0\]\.name/);
    expect(() => parseSettings({ teams: [] })).toThrow(/teams/);
    await expect(loadSettingsFile(join(dir, 'missing.yaml'))).rejects.toThrow(/cannot read/);
    await writeFile(join(dir, 'broken.yaml'), 'teams: [\n');
    await expect(loadSettingsFile(join(dir, 'broken.yaml'))).rejects.toThrow(/not valid YAML/);
  });

  it('takes ${VAR} and ${VAR:-default} from the environment, typed like YAML; an unset one names the line', async () => {
    const path = join(dir, 'env.yaml');
    await writeFile(
      path,
      [
        'teams:',
        '  - name: demo',
        '    plan:',
        '      max_inflight: ${INFLIGHT:-3}',
        '    keys:',
        '      - { key: "${ADMIN_KEY}", scopes: [Admin] }',
        '      - { key: "${READ_KEY:-sk_read_default}", scopes: [Read] }',
        '      - { key: "sk_$${literal}", scopes: [Read] }',
        '',
      ].join('\n'),
    );
    const s = await loadSettingsFile(path, { ADMIN_KEY: 'sk_admin_from_env', INFLIGHT: '5' });
    expect(s.teams[0]?.keys.map((k) => k.key)).toEqual(['sk_admin_from_env', 'sk_read_default', 'sk_${literal}']);
    expect(s.teams[0]?.plan.max_inflight).toBe(5);
    const err = await loadSettingsFile(path, {}).then(() => new Error('no error'), (e: unknown) => e as Error);
    expect(err).toBeInstanceOf(SettingsError);
    expect(err.message).toBe(`${path}:6:16 teams[0].keys[0].key: environment variable ADMIN_KEY is not set (set it, or give a default: \${ADMIN_KEY:-value})`);
  });

  it('is a SluiceError with a code, and the CLI maps it to the configuration exit code', () => {
    const err = (() => {
      try {
        parseSettings({ teams: [] });
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(SettingsError);
    expect(err).toBeInstanceOf(SluiceError);
    expect(err).toMatchObject({ name: 'SettingsError', code: 'SETTINGS_INVALID', retryable: false });
    expect(exitCodeOf(err)).toBe(EXIT.config);
  });

  it('engine: bounds with defaults for a small container; a size is bytes or a number with a unit; errors name the field', async () => {
    const teams = [{ name: 'demo', keys: [{ key: 'sk_engine_key', scopes: ['Admin'] }] }];
    expect(parseSettings({ teams }).engine).toEqual({ memory_limit: '256MiB', max_temp_directory_size: '8GiB', encode_results: 'on_first_read', walled_teams: true });
    expect(() => parseSettings({ teams, engine: { encode_results: 'later' } })).toThrow(/engine\.encode_results/);
    expect(parseSettings({ teams, engine: { memory_limit: 536870912, threads: 1, temp_directory: '/tmp/x' } }).engine).toMatchObject({ memory_limit: 536870912, threads: 1, temp_directory: '/tmp/x' });
    expect(() => parseSettings({ teams, engine: { memory_limit: '1 gigabyte' } })).toThrow(/engine\.memory_limit: a size is a number of bytes or a number with a unit/);
    expect(() => parseSettings({ teams, engine: { threads: 0 } })).toThrow(/engine\.threads/);
    expect(() => parseSettings({ teams, engine: { memory: '1GB' } })).toThrow(/engine: .*memory/);
    expect(parseSettings({ teams, engine: { memory_admission: 'reserve' } }).engine.memory_admission).toBe('reserve');
    expect(() => parseSettings({ teams, engine: { memory_admission: 'fair' } })).toThrow(/engine\.memory_admission/);
    // The engine takes them: DuckDB reports what it was given.
    const dir = await mkdtemp(join(tmpdir(), 'sluice-engine-settings-'));
    try {
      const { openEngine } = await import('../../src/service/engine/index.ts');
      const engine = await openEngine({ dataDir: dir, memoryLimit: '96MiB', maxTempDirectorySize: 1 << 30, defaultThreads: 1 });
      try {
        const rows = await (engine as unknown as { withConnection<T>(fn: (c: { runAndReadAll(sql: string): Promise<{ getRowsJson(): unknown[][] }> }) => Promise<T>): Promise<T> }).withConnection(
          async (c) => (await c.runAndReadAll("select current_setting('memory_limit'), current_setting('max_temp_directory_size'), current_setting('threads')::INTEGER, current_setting('temp_directory')")).getRowsJson(),
        );
        // The instance of users' SQL gets three quarters of memory_limit, the files instance the
        // rest (engine/index.ts): together what was given.
        expect(rows[0]).toEqual(['72.0 MiB', '1.0 GiB', 1, join(dir, 'tmp')]);
      } finally {
        await engine.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('defaults to team demo with one Admin key from SERVICE_API_KEY, or a generated one', () => {
    const fromEnv = defaultSettings({ SERVICE_API_KEY: 'sk_from_env_1' });
    expect(fromEnv.generatedKey).toBeUndefined();
    expect(fromEnv.settings.teams).toEqual([expect.objectContaining({ name: 'demo', keys: [{ key: 'sk_from_env_1', scopes: ['Admin'] }] })]);
    const generated = defaultSettings({});
    expect(generated.generatedKey).toMatch(/^sk_.{20,}$/);
    expect(generated.settings.teams[0]?.keys[0]?.key).toBe(generated.generatedKey);
  });
  it('a file read over base settings names only what it changes: objects merge field by field, lists are replaced', async () => {
    const base = { teams: [{ name: 'demo', plan: { credits_per_cycle: 5 }, keys: [{ key: 'sk_base_admin', scopes: ['Admin'] }] }], limits: { retention_days: 1, result_store_max_bytes: 1024 } };
    const path = join(dir, 'partial.yaml');
    await writeFile(path, 'limits: { retention_days: 3 }\nengine: { memory_limit: 300MiB }\ntiers: { small: { threads: 2 } }\n');
    const { settings: s, ownTeams } = await loadSettingsOver(path, base, {});
    expect(ownTeams).toBe(false);
    expect(s.teams).toEqual([expect.objectContaining({ name: 'demo', plan: expect.objectContaining({ credits_per_cycle: 5 }), keys: [{ key: 'sk_base_admin', scopes: ['Admin'] }] })]);
    expect([s.limits.retention_days, s.limits.result_store_max_bytes, s.limits.page_rows]).toEqual([3, 1024, 32_000]);
    expect([s.engine.memory_limit, s.engine.max_temp_directory_size, s.tiers.small.threads]).toEqual(['300MiB', '8GiB', 2]);
    // A file's teams replace the base's whole (a team's plan is not taken from another team).
    await writeFile(path, 'teams: [{ name: ops, keys: [{ key: sk_ops_admin, scopes: [Admin] }] }]\n');
    const { settings: replaced, ownTeams: named } = await loadSettingsOver(path, base, {});
    expect(named).toBe(true);
    expect(replaced.teams.map((t) => [t.name, t.plan.credits_per_cycle])).toEqual([['ops', 10_000]]);
    expect(replaced.limits.retention_days).toBe(1);
    // Without a base a file still needs its teams; a bad value is named with its field, base or not.
    await writeFile(path, 'engine: { memory_limit: lots }\n');
    await expect(loadSettingsOver(path, base, {})).rejects.toThrow(`${path}: engine.memory_limit: a size is a number of bytes`);
    await expect(loadSettingsFile(path, {})).rejects.toThrow(/teams: /);
    await writeFile(path, '- teams\n');
    await expect(readSettingsFile(path, {})).rejects.toThrow(`${path}: expected settings fields (teams, limits, engine, ...), got a list`);
    await writeFile(path, '');
    expect(await readSettingsFile(path, {})).toEqual({});
  });

  it('sluice serve --config with a file without teams keeps the default team and its key', async () => {
    const path = join(dir, 'serve-partial.yaml');
    await writeFile(path, 'datasets: []\nlimits: { retention_days: 2 }\n');
    const service = await startService({ dataDir: join(dir, 'serve-partial'), port: 0, settings: path });
    try {
      const key = service.generatedKey ?? process.env.SERVICE_API_KEY;
      expect(key).toBeDefined();
      const usage = await fetch(`${service.url}/v1/usage`, { headers: { 'X-Service-Api-Key': key! } });
      expect(usage.status).toBe(200);
      const executed = await fetch(`${service.url}/v1/sql/execute`, { method: 'POST', headers: { 'X-Service-Api-Key': key!, 'content-type': 'application/json' }, body: JSON.stringify({ sql: 'select 1 as x' }) });
      const { execution_id } = (await executed.json()) as { execution_id: string };
      let status: { state: string; execution_ended_at?: string; expires_at?: string };
      do {
        await new Promise((ok) => setTimeout(ok, 50));
        status = (await (await fetch(`${service.url}/v1/execution/${execution_id}/status`, { headers: { 'X-Service-Api-Key': key! } })).json()) as typeof status;
      } while (status.execution_ended_at === undefined);
      expect(Date.parse(status.expires_at!) - Date.parse(status.execution_ended_at)).toBe(2 * 86_400_000);
    } finally {
      await service.close();
    }
  });
});
