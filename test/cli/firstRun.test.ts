// What a new user meets first in the CLI: data on stdout stays clean, every job of a run is
// reported, errors name what the user set. In process (runCli with captured streams) where the
// command writes only through its io; spawned where data goes to the real stdout.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/commands/index.ts';
import type { CliIo, OutputStream } from '../../src/cli/io.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { duck } from '../jobs/duck.ts';
import { sluice } from './sluiceProcess.ts';

let svc: TestService;
let dir: string;
let env: Record<string, string>;

beforeAll(async () => {
  svc = await startTestService({ sampleRows: 2000, limits: { page_rows: 500 } });
  dir = await mkdtemp(join(tmpdir(), 'sluice-first-run-'));
  env = { SERVICE_BASE_URL: svc.url, SERVICE_API_KEY: svc.keys.demo.admin };
});
afterAll(async () => {
  await svc.close();
  await rm(dir, { recursive: true, force: true });
});

export function capture(isTTY = false): OutputStream & { text(): string; bytes(): Buffer } {
  const chunks: Buffer[] = [];
  return {
    isTTY,
    write: (c: string | Uint8Array) => (chunks.push(typeof c === 'string' ? Buffer.from(c) : Buffer.from(c)), true),
    once: () => undefined,
    text: () => Buffer.concat(chunks).toString('utf8'),
    bytes: () => Buffer.concat(chunks),
  };
}

export function cliIo(extraEnv: Record<string, string | undefined> = {}, stdin = ''): CliIo & { out: ReturnType<typeof capture>; err: ReturnType<typeof capture> } {
  const out = capture();
  const err = capture();
  const input = new PassThrough();
  input.end(stdin);
  return { stdout: out, stderr: err, stdin: input, env: { ...env, ...extraEnv }, cwd: dir, out, err };
}

async function jobFile(name: string, body: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, body);
  return path;
}

const remote = `connection:\n  base_url: \${SERVICE_BASE_URL}\nstate_dir: \${OUT}/state\n`;
const live = () => new AbortController().signal;

describe('data on stdout (path: "-")', () => {
  it('NDJSON to stdout is only the rows; the summary goes to stderr', async () => {
    const file = await jobFile('stdout-ndjson.yaml', `${remote}jobs:\n  - name: rows\n    source: { sql: "select id, name from sample.events order by id" }\n    outputs: [{ format: ndjson, path: "-" }]\n`);
    const result = await sluice(['run', file, '--log-format', 'text'], { env: { ...env, OUT: join(dir, 'stdout-ndjson') } });
    expect(result.stderr).not.toMatch(/error/i);
    expect(result.code).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(2000);
    expect(lines.map((l) => (JSON.parse(l) as { id: number }).id)).toEqual(Array.from({ length: 2000 }, (_, i) => i));
    expect(result.stderr).toMatch(/^rows: 2,000 rows, 1 file/m);
  });

  it('Parquet to stdout reads back with DuckDB, also with --json', async () => {
    const file = await jobFile('stdout-parquet.yaml', `${remote}jobs:\n  - name: pq\n    source: { sql: "select id, amount from sample.events" }\n    outputs: [{ format: parquet, path: "-" }]\n`);
    const { spawn } = await import('node:child_process');
    const { sluiceEntry, testEnv } = await import('./sluiceProcess.ts');
    const child = spawn('node', [sluiceEntry(), 'run', file, '--json'], { env: testEnv({ ...env, OUT: join(dir, 'stdout-parquet') }), stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    let err = '';
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code, err).toBe(0);
    const path = join(dir, 'from-stdout.parquet');
    await writeFile(path, Buffer.concat(out));
    expect(await duck(`select count(*)::int as n, sum(id)::bigint::varchar as s from read_parquet('${path}')`)).toEqual([{ n: 2000, s: String((1999 * 2000) / 2) }]);
    const summary = err.split('\n').filter((l) => l.startsWith('{"job"')).map((l) => JSON.parse(l) as { job: string; outcome: string; rows: number });
    expect(summary).toEqual([expect.objectContaining({ job: 'pq', outcome: 'ok', rows: 2000 })]);
  });
});

describe('a run of several jobs', () => {
  const three = `${remote}jobs:
  - name: good
    source: { sql: "select 1 as x" }
    outputs: [{ format: csv, path: "\${OUT}/good" }]
  - name: broken
    source: { sql: "select * from no_such_table" }
    outputs: [{ format: csv, path: "\${OUT}/broken" }]
  - name: also_good
    source: { sql: "select 2 as x" }
    outputs: [{ format: csv, path: "\${OUT}/also" }]
`;

  it('shows every job with its outcome, the failed one with its error (text)', async () => {
    const io = cliIo({ OUT: join(dir, 'multi-text') });
    const file = await jobFile('multi.yaml', three);
    const code = await runCli(['run', file, '--log-format', 'json'], { io, signal: live() });
    expect(code).toBe(5);
    const text = io.out.text();
    expect(text).toMatch(/^good: 1 rows?, /m);
    expect(text).toMatch(/^broken: FAILED \(EXECUTION_FAILED, exit code 5\): .*no_such_table/m);
    // The error points into the job file, where an editor or a CI annotation opens it.
    const lines = three.split('\n');
    const line = lines.findIndex((l) => l.includes('no_such_table'));
    const at = `${file}:${line + 1}:${lines[line]!.indexOf('no_such_table') + 1}`;
    expect(text).toContain(`broken: FAILED (EXECUTION_FAILED, exit code 5): ${at}: `);
    const logged = io.err.text().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.level === 'error');
    expect(logged).toMatchObject({ job: 'broken', sql_at: at, detail: expect.arrayContaining([expect.stringMatching(/\^$/)]) });
    expect(text).toMatch(/^also_good: 1 rows?, /m);
  });

  it('shows every job with its outcome, the failed one with its error (--json)', async () => {
    const io = cliIo({ OUT: join(dir, 'multi-json') });
    const code = await runCli(['run', await jobFile('multi.yaml', three), '--json', '--log-format', 'json'], { io, signal: live() });
    expect(code).toBe(5);
    const entries = io.out.text().trimEnd().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(entries.map((e) => [e.job, e.outcome])).toEqual([['good', 'ok'], ['broken', 'failed'], ['also_good', 'ok']]);
    expect(entries[1]).toMatchObject({ exit_code: 5, error: { code: 'EXECUTION_FAILED', message: expect.stringContaining('no_such_table') } });
  });
});

describe('a rejected API key', () => {
  it('names the variable the job actually used (api_key_env), not the default one', async () => {
    const file = await jobFile('mykey.yaml', `connection:\n  base_url: \${SERVICE_BASE_URL}\n  api_key_env: MY_KEY\nstate_dir: \${OUT}/state\njobs:\n  - name: j\n    source: { sql: "select 1" }\n    outputs: [{ format: csv, path: "\${OUT}/x" }]\n`);
    const io = cliIo({ OUT: join(dir, 'mykey'), MY_KEY: 'sk_wrong_key', SERVICE_API_KEY: undefined });
    const code = await runCli(['run', file, '--json', '--log-format', 'json'], { io, signal: live() });
    expect(code).toBe(3);
    const [entry] = io.out.text().trimEnd().split('\n').map((l) => JSON.parse(l) as { error: { message: string } });
    expect(entry!.error.message).toMatch(/401 Invalid API Key \(check the environment variable MY_KEY\)/);
    expect(io.err.text()).not.toContain('SERVICE_API_KEY');
  });
});

describe('views on the embedded service', () => {
  it('upsert and refresh without --wait still wait, so the refresh is not killed with the command', async () => {
    const local = ['--data-dir', join(dir, 'embedded-views'), '--sample-rows', '100', '--log-format', 'json'];
    const noRemote = { SERVICE_BASE_URL: undefined, SERVICE_API_KEY: undefined };
    const created = cliIo(noRemote);
    expect(await runCli(['queries', 'create', '--name', 'n', '--sql', 'select count(*) as n from sample.events', ...local], { io: created, signal: live() })).toBe(0);
    const { query_id } = JSON.parse(created.out.text()) as { query_id: number };

    const upsert = cliIo(noRemote);
    expect(await runCli(['views', 'upsert', 'result_first', '--query-id', String(query_id), ...local], { io: upsert, signal: live() })).toBe(0);
    expect(JSON.parse(upsert.out.text())).toMatchObject({ execution_id: expect.stringMatching(/^01/), state: 'QUERY_STATE_COMPLETED' });
    expect(upsert.err.text()).toContain('waiting for the refresh');

    const refresh = cliIo(noRemote);
    expect(await runCli(['views', 'refresh', 'result_first', ...local], { io: refresh, signal: live() })).toBe(0);
    expect(JSON.parse(refresh.out.text())).toMatchObject({ state: 'QUERY_STATE_COMPLETED' });

    // The view's table is there for the next command (its own embedded service, same data directory).
    const read = cliIo(noRemote);
    expect(await runCli(['query', 'select n from service.demo.result_first', '--format', 'ndjson', ...local], { io: read, signal: live() })).toBe(0);
    expect(read.out.text()).toBe('{"n":100}\n');
  });
});

describe('sluice query: sources and destinations', () => {
  const sql = 'select id, name from sample.events where id < 3 order by id';
  const query = async (args: string[], stdin = '', extraEnv: Record<string, string | undefined> = {}) => {
    const io = cliIo(extraEnv, stdin);
    const code = await runCli(['query', ...args, '--log-format', 'json'], { io, signal: live() });
    return { code, stdout: io.out.text(), bytes: io.out.bytes(), stderr: io.err.text() };
  };
  // A query that would fail (exit 5) if it ran: a destination error found first exits 6 or 2 instead.
  const failing = 'select * from no_such_table_at_all';

  it('--out - is standard output; CSV lines end with \\n unless --crlf; --limit caps every format', async () => {
    const csv = await query([sql, '--out', '-', '--format', 'csv']);
    expect(csv).toMatchObject({ code: 0, stdout: 'id,name\n0,event_0\n1,event_1\n2,event_2\n' });
    const { existsSync } = await import('node:fs');
    expect(existsSync(join(dir, '-'))).toBe(false);
    expect((await query([sql, '--format', 'csv', '--crlf'])).stdout).toBe('id,name\r\n0,event_0\r\n1,event_1\r\n2,event_2\r\n');
    const limited = await query(['select id from sample.events order by id', '--format', 'ndjson', '--limit', '3']);
    expect(limited.stdout).toBe('{"id":0}\n{"id":1}\n{"id":2}\n');
  });

  it('infers the format from the extension: .arrow is the IPC file format, .arrows the stream; .json and unknown ones are refused before running', async () => {
    const { readFile } = await import('node:fs/promises');
    const { tableFromIPC } = await import('apache-arrow');
    expect((await query([sql, '--out', join(dir, 'q.arrow')])).code).toBe(0);
    const file = await readFile(join(dir, 'q.arrow'));
    expect(file.subarray(0, 6).toString('latin1')).toBe('ARROW1');
    expect(tableFromIPC(file).numRows).toBe(3);
    expect((await query([sql, '--out', join(dir, 'q.arrows')])).code).toBe(0);
    const streamed = await readFile(join(dir, 'q.arrows'));
    expect(streamed.subarray(0, 6).toString('latin1')).not.toBe('ARROW1');
    expect(tableFromIPC(streamed).numRows).toBe(3);
    expect((await query([sql, '--out', join(dir, 'q.jsonl')])).code).toBe(0);
    expect((await readFile(join(dir, 'q.jsonl'), 'utf8')).split('\n')[0]).toBe('{"id":0,"name":"event_0"}');

    const json = await query([failing, '--out', join(dir, 'q.json')]);
    expect(json.code).toBe(2);
    expect(json.stderr).toMatch(/\.json is read as one JSON document.*\.ndjson or \.jsonl/);
    const unknown = await query([failing, '--out', join(dir, 'q.txt')]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/cannot tell the format from the extension \.txt/);
  });

  it('checks the destination before the query runs: missing folder, a folder as the name, wrong schemes and bucket names', async () => {
    const missing = await query([failing, '--out', join(dir, 'no', 'such', 'folder', 'x.csv')]);
    expect(missing.code).toBe(6);
    expect(missing.stderr).toContain(`the folder ${join(dir, 'no', 'such', 'folder')} does not exist; create it first`);
    expect(missing.stderr).not.toMatch(/sluice-tmp|ENOENT/);
    const folder = await query([failing, '--out', dir, '--format', 'csv']);
    expect(folder.code).toBe(6);
    expect(folder.stderr).toContain('is a folder');
    for (const [out, message] of [
      ['gs://bucket/x.csv', /gs:\/\/ is not a destination sluice writes to/],
      ['S3://bucket/x.csv', /lowercase s3/],
      ['s3:/bucket/x.csv', /lowercase s3, two slashes/],
      ['s3://My_Bucket/x.csv', /bucket name is 3-63 lowercase letters/],
      ['s3://bucket/', /name the object to write/],
    ] as const) {
      const result = await query([failing, '--out', out]);
      expect(result.code, out).toBe(2);
      expect(result.stderr, out).toMatch(message);
    }
  });

  it('writes to S3 (checked first: a missing bucket fails before the query runs)', async () => {
    const { startLocalS3 } = await import('../helpers/s3.ts');
    const s3 = await startLocalS3();
    try {
      await s3.createBucket('query-out');
      const ok = await query(['select id, amount from sample.events', '--out', 's3://query-out/reports/rows.parquet', '--s3-endpoint', s3.endpoint]);
      expect(ok.stderr).not.toMatch(/"level":"error"/);
      expect(ok.code).toBe(0);
      expect(await s3.list('query-out')).toEqual(['reports/rows.parquet']);
      const local = join(dir, 'from-s3.parquet');
      await writeFile(local, await s3.get('query-out', 'reports/rows.parquet'));
      expect(await duck(`select count(*)::int as n from read_parquet('${local}')`)).toEqual([{ n: 2000 }]);

      const noBucket = await query([failing, '--out', 's3://no-such-bucket/x.csv', '--s3-endpoint', s3.endpoint]);
      expect(noBucket.code).toBe(6);
      expect(noBucket.stderr).toContain('the bucket no-such-bucket does not exist');
    } finally {
      await s3.stop();
    }
  });

  it('takes the SQL from stdin or a file, or runs a saved query with parameters', async () => {
    expect((await query(['-', '--format', 'ndjson'], 'select 7 as seven')).stdout).toBe('{"seven":7}\n');
    const sqlFile = join(dir, 'q.sql');
    await writeFile(sqlFile, 'select 8 as eight\n');
    expect((await query(['--file', sqlFile, '--format', 'ndjson'])).stdout).toBe('{"eight":8}\n');
    expect((await query(['--file', '-', '--format', 'ndjson'], 'select 9 as nine')).stdout).toBe('{"nine":9}\n');

    const created = cliIo();
    expect(await runCli(['queries', 'create', '--name', 'p', '--sql', 'select {{k}} * 2 as doubled', '--param', 'k:number=1'], { io: created, signal: live() })).toBe(0);
    const { query_id } = JSON.parse(created.out.text()) as { query_id: number };
    expect((await query(['--query-id', String(query_id), '--param', 'k=21', '--format', 'ndjson'])).stdout).toBe('{"doubled":42}\n');

    const both = await query([sql, '--query-id', '1']);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('give one of an SQL argument, --query-id, not several');
    expect((await query([])).code).toBe(2);
  });
});

describe('exit codes', () => {
  it('an archived query exits 2 (change the job or unarchive), not 3, which is for authentication', async () => {
    const created = cliIo();
    expect(await runCli(['queries', 'create', '--name', 'old', '--sql', 'select 1 as x'], { io: created, signal: live() })).toBe(0);
    const { query_id } = JSON.parse(created.out.text()) as { query_id: number };
    expect(await runCli(['queries', 'archive', String(query_id)], { io: cliIo(), signal: live() })).toBe(0);
    const io = cliIo();
    const code = await runCli(['query', '--query-id', String(query_id), '--format', 'csv', '--log-format', 'json'], { io, signal: live() });
    expect(io.err.text()).toMatch(/"error":"QUERY_ARCHIVED"/);
    expect(io.err.text()).toMatch(/archived/);
    expect(code).toBe(2);
  });
});

describe('a job checks its outputs before it starts an execution', () => {
  // If the execution ran, this source would fail it (exit 5): exit 6 or 2 shows nothing was started.
  const job = (name: string, output: string, extra = '') =>
    `${remote}jobs:\n  - name: ${name}\n    source: { sql: "select * from no_such_table_anywhere" }\n    retries: 3\n    retry_delay_seconds: 30\n    outputs:\n      - ${output}\n${extra}`;

  it('a missing bucket, a foreign folder, a path under a file: refused before running, not retried', async () => {
    const { startLocalS3 } = await import('../helpers/s3.ts');
    const { mkdir } = await import('node:fs/promises');
    const s3 = await startLocalS3();
    try {
      const foreign = join(dir, 'foreign');
      await mkdir(foreign, { recursive: true });
      await writeFile(join(foreign, 'notes.txt'), 'mine');
      await writeFile(join(dir, 'plain-file'), 'x');
      const cases: [string, string, RegExp][] = [
        ['bucket', `{ format: csv, path: "s3://no-such-bucket/x", s3: { endpoint: "${s3.endpoint}", force_path_style: true } }`, /the bucket no-such-bucket does not exist/],
        ['foreign', `{ format: csv, path: "${foreign}" }`, /holds files sluice did not write \(notes\.txt\)/],
        ['under_file', `{ format: csv, path: "${join(dir, 'plain-file', 'out')}" }`, /plain-file is a file/],
      ];
      for (const [name, output, message] of cases) {
        const io = cliIo({ OUT: join(dir, `check-${name}`) });
        const code = await runCli(['run', await jobFile(`check-${name}.yaml`, job(name, output)), '--json', '--log-format', 'json'], { io, signal: live() });
        expect(code, name).toBe(6);
        expect(io.out.text(), name).toMatch(message);
        expect(io.out.text(), name).toContain('"code":"DESTINATION_CHECK_FAILED"');
        expect(io.err.text(), name).not.toContain('retrying');
      }
    } finally {
      await s3.stop();
    }
  });

  it('missing S3 credentials: a configuration error (exit 2) before running, not retried', async () => {
    const { sluice: run } = await import('./sluiceProcess.ts');
    const file = await jobFile('nocreds.yaml', job('nocreds', '{ format: csv, path: "s3://some-bucket/x", s3: { endpoint: "http://127.0.0.1:9", region: "us-east-1" } }'));
    const none = join(dir, 'no-such-aws-file');
    const result = await run(['run', file, '--json'], {
      env: { ...env, OUT: join(dir, 'nocreds'), AWS_ACCESS_KEY_ID: undefined, AWS_SECRET_ACCESS_KEY: undefined, AWS_SESSION_TOKEN: undefined, AWS_PROFILE: undefined, AWS_CONFIG_FILE: none, AWS_SHARED_CREDENTIALS_FILE: none, AWS_EC2_METADATA_DISABLED: 'true', AWS_CONTAINER_CREDENTIALS_FULL_URI: undefined, AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: undefined, AWS_WEB_IDENTITY_TOKEN_FILE: undefined },
    });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stdout).toMatch(/no S3 credentials found/);
    expect(result.stdout).toContain('"code":"CONFIG_INVALID"');
    expect(result.stderr).not.toContain('retrying');
  });
});
