import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT, sluiceEntry, testEnv } from './sluiceProcess.ts';

// What a command loads before it does anything: checking a job file or printing help must not pay
// for DuckDB (the service), parquet-wasm or the AWS SDK, which only running an export needs, nor for
// the MCP SDK, which only `sluice mcp` needs, nor for OpenTelemetry, which only a run with an OTLP
// endpoint in its environment needs, nor for google-auth-library, which only a gs:// output needs.

const HEAVY = /^(?:@duckdb\/|parquet-wasm|@aws-sdk\/|@modelcontextprotocol\/|@opentelemetry\/|google-auth-library)/;
const work = mkdtempSync(join(tmpdir(), 'sluice-startup-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** The packages a Node process resolved in its main thread, recorded by test/helpers/trackImports.ts. */
function packagesLoadedBy(args: readonly string[], options: { cwd?: string; env?: Record<string, string> } = {}): { packages: string[]; status: number | null; stderr: string } {
  const out = join(work, `${Math.random().toString(36).slice(2)}.json`);
  const child = spawnSync('node', ['--import', join(ROOT, 'test/helpers/trackImports.ts'), ...args], {
    cwd: options.cwd ?? ROOT,
    encoding: 'utf8',
    env: testEnv({ ...options.env, SLUICE_TRACK_IMPORTS: out }),
  });
  return { packages: JSON.parse(readFileSync(out, 'utf8')) as string[], status: child.status, stderr: child.stderr };
}

describe('start-up', () => {
  it('importing the job file loader and the built-in connectors resolves none of DuckDB, parquet-wasm, the AWS SDK', () => {
    const { packages, status, stderr } = packagesLoadedBy(['--input-type=module', '-e', "await import('./src/config/index.ts'); await import('./connectors/index.ts');"]);
    expect(stderr).toBe('');
    expect(status).toBe(0);
    expect(packages).toContain('zod'); // the hook did record
    expect(packages.filter((p) => HEAVY.test(p))).toEqual([]);
  });

  it('`sluice validate` and `sluice --help` do not load @duckdb/node-api (nor the SDK or parquet-wasm)', () => {
    const validate = packagesLoadedBy([sluiceEntry(), 'validate', join(ROOT, 'config/examples/quickstart.yaml')]);
    expect(validate.status).toBe(0);
    expect(validate.packages).toContain('yaml');
    expect(validate.packages.filter((p) => HEAVY.test(p))).toEqual([]);
    const help = packagesLoadedBy([sluiceEntry(), '--help']);
    expect(help.status).toBe(0);
    expect(help.packages.filter((p) => HEAVY.test(p))).toEqual([]);
  });

  it('`sluice run` of the quickstart (embedded service, Parquet to a folder) loads no object store SDK, MCP SDK, OpenTelemetry nor Google auth', () => {
    // Each is memory the run's peak would carry (tens of MB between them) for nothing it does.
    const dir = mkdtempSync(join(work, 'run-'));
    copyFileSync(join(ROOT, 'config/examples/quickstart.yaml'), join(dir, 'quickstart.yaml'));
    const run = packagesLoadedBy([sluiceEntry(), 'run', 'quickstart.yaml'], { cwd: dir, env: { SLUICE_SAMPLE_ROWS: '2000' } });
    expect(run.stderr).toContain('"outcome":"ok"');
    expect(run.status).toBe(0);
    // The hook did record what the run needs in this thread (the embedded service's DuckDB is in its own): the Parquet writer, the HTTP client.
    expect(run.packages).toEqual(expect.arrayContaining(['parquet-wasm', 'undici']));
    expect(run.packages.filter((p) => /^(?:@aws-sdk\/|@smithy\/|@azure\/|google-auth-library|@modelcontextprotocol\/|@opentelemetry\/)/.test(p))).toEqual([]);
  });

  it("`import 'sluice'` (the library's entry) loads no OpenTelemetry and no Google auth", () => {
    const { packages, status, stderr } = packagesLoadedBy(['--input-type=module', '-e', "await import('./src/index.ts');"]);
    expect(stderr).toBe('');
    expect(status).toBe(0);
    expect(packages).toContain('zod');
    expect(packages.filter((p) => /^(?:@opentelemetry\/|google-auth-library)/.test(p))).toEqual([]);
  });

  it('a run with an OTLP endpoint in its environment is what loads OpenTelemetry', () => {
    const { packages, status } = packagesLoadedBy(['--input-type=module', '-e', "const t = await import('./src/telemetry/index.ts'); const on = await t.startTelemetry({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' }, 'run'); await on?.shutdown();"]);
    expect(status).toBe(0);
    expect(packages).toEqual(expect.arrayContaining(['@opentelemetry/api', '@opentelemetry/sdk-trace', '@opentelemetry/exporter-trace-otlp-proto']));
  });
});
