import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_EMBEDDED_DATA_DIR } from '../../src/config/jobSchema.ts';
import { call } from './api.ts';

const BIN = fileURLToPath(new URL('../../bin/sluice.js', import.meta.url));
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-serve-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

function run(args: string[], env: NodeJS.ProcessEnv = {}, cwd?: string) {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], ...(cwd === undefined ? {} : { cwd }) });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const listening = async (): Promise<string> => {
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      const m = /listening on (http:\/\/\S+\/api)/.exec(out);
      if (m?.[1] !== undefined) return m[1];
      if (child.exitCode !== null) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`serve did not start: ${out} ${err}`);
  };
  return { child, exited, listening, output: () => ({ out, err }) };
}

describe('sluice serve', () => {
  it('prints the URL, serves with the --config keys, and stops cleanly on SIGTERM', async () => {
    const config = join(dir, 'service.yaml');
    await writeFile(config, 'teams:\n  - name: demo\n    keys:\n      - { key: "sk_cli_test_key", scopes: [Admin] }\ndatasets: []\n');
    const p = run(['serve', '--port', '0', '--data-dir', join(dir, 'data'), '--config', config]);
    const url = await p.listening();
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api$/);
    const r = await call({ url }, 'POST', '/v1/sql/execute', { key: 'sk_cli_test_key', body: { sql: 'SELECT 1' } });
    expect(r.status).toBe(200);
    expect((await call({ url }, 'GET', '/v1/nowhere', { key: 'wrong_key_x' })).status).toBe(401);
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
  });

  it('keeps its data where the embedded service of a job does (.sluice/service) when --data-dir is not given', async () => {
    const cwd = await mkdtemp(join(dir, 'cwd-'));
    const config = join(cwd, 'service.yaml');
    await writeFile(config, 'teams:\n  - name: demo\n    keys:\n      - { key: "sk_cli_test_key", scopes: [Admin] }\ndatasets: []\n');
    const p = run(['serve', '--port', '0', '--config', config], {}, cwd);
    const url = await p.listening();
    const r = await call({ url }, 'POST', '/v1/query', { key: 'sk_cli_test_key', body: { name: 'kept', query_sql: 'SELECT 1' } });
    expect(r.status).toBe(200);
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
    expect(existsSync(join(cwd, DEFAULT_EMBEDDED_DATA_DIR, 'catalog', 'queries', `${r.json.query_id}.json`))).toBe(true);
  });

  it('prints a generated key once when there is no config and no SERVICE_API_KEY', async () => {
    const p = run(['serve', '--port', '0', '--data-dir', join(dir, 'data2')], { SERVICE_API_KEY: '' });
    const url = await p.listening();
    const key = /generated API key.*: (sk_\S+)/.exec(p.output().out)?.[1];
    expect(key).toBeDefined();
    expect((await call({ url }, 'GET', '/v1/execution/01ARZ3NDEKTSV4RRFFQ69G5FAV/status', { key: key! })).status).toBe(404);
    p.child.kill('SIGINT');
    expect(await p.exited).toBe(0);
  });

  it('reports bad options and bad settings with a non-zero exit', async () => {
    const badPort = run(['serve', '--port', 'eighty']);
    expect(await badPort.exited).toBe(2);
    expect(badPort.output().err).toMatch(/--port must be an integer/);
    const unknown = run(['serve', '--colour']);
    expect(await unknown.exited).toBe(2);
    const config = join(dir, 'bad.yaml');
    await writeFile(config, 'teams: []\n');
    const bad = run(['serve', '--port', '0', '--data-dir', join(dir, 'data3'), '--config', config]);
    expect(await bad.exited).toBe(1);
    expect(bad.output().err).toMatch(/bad\.yaml: teams/);
  });

  it('has --help and --version', async () => {
    const help = run(['--help']);
    expect(await help.exited).toBe(0);
    expect(help.output().out).toMatch(/serve/);
    const version = run(['--version']);
    expect(await version.exited).toBe(0);
    expect(version.output().out.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    const unknown = run(['frobnicate']);
    expect(await unknown.exited).toBe(2);
  });
});
