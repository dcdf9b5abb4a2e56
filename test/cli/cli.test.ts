import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tableFromIPC } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceClient } from '../../src/client/index.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { duck } from '../jobs/duck.ts';
import { executionState, logLines, ROOT, sluice, startedExecutionId, startSluice, terminate } from './sluiceProcess.ts';

let svc: TestService;
let dir: string;
let env: Record<string, string>;

beforeAll(async () => {
  svc = await startTestService({ sampleRows: 2000, limits: { page_rows: 500 } });
  dir = await mkdtemp(join(tmpdir(), 'sluice-cli-'));
  env = { SERVICE_BASE_URL: svc.url, SERVICE_API_KEY: svc.keys.demo.admin };
});
afterAll(async () => {
  await svc.close();
  await rm(dir, { recursive: true, force: true });
});

async function jobFile(name: string, body: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, body);
  return path;
}

const remote = `connection:\n  base_url: \${SERVICE_BASE_URL}\nstate_dir: \${OUT}/state\n`;

describe('sluice (spawned)', () => {
  it('--version prints the package version; no command prints help and exits 2', async () => {
    const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    const v = await sluice(['--version']);
    expect(v).toMatchObject({ code: 0, stdout: `${version}\n` });
    const none = await sluice([]);
    expect(none.code).toBe(2);
    expect(none.stdout).toMatch(/Commands:\n {2}run /);
  });

  it('an unknown command or option is a usage error (exit 2) that says what was wrong', async () => {
    const cmd = await sluice(['rnu']);
    expect(cmd.code).toBe(2);
    expect(cmd.stderr).toContain('unknown command "rnu"');
    const opt = await sluice(['validate', '--frobnicate', 'x.yaml']);
    expect(opt.code).toBe(2);
    expect(opt.stderr).toMatch(/unknown option --frobnicate \(an argument that starts with '-' goes after '--', as in: -- "--frobnicate"\)\nusage: sluice validate FILE\.\.\./);
    expect(opt.stderr).not.toContain('did you mean');
    const typo = await sluice(['run', 'x.yaml', '--fersh']);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('unknown option --fersh; did you mean --fresh?');
    for (const bad of ['0', 'many', '1.5', '65']) {
      const workers = await sluice(['run', 'x.yaml', '--workers', bad]);
      expect(workers.code, bad).toBe(2);
      expect(workers.stderr).toContain(`--workers takes a whole number from 1 to 64 or auto (one per core), got "${bad}"`);
    }
    const group = await sluice(['views']);
    expect(group.code).toBe(2);
    expect(group.stderr).toContain('expected a subcommand: list, get, upsert, delete, refresh');
  });

  it('text logs (a terminal\'s) do not repeat the printed summary: "job finished" names the job; JSON logs carry it whole', async () => {
    const file = await jobFile('finished.yaml', `${remote}jobs:\n  - name: fin\n    source: { sql: "select 1 as x" }\n    outputs: [{ format: csv, path: "\${OUT}/fin" }]\n`);
    const text = await sluice(['run', file, '--log-format', 'text', '--fresh'], { env: { ...env, OUT: join(dir, 'finished.out') } });
    expect(text.code, text.stderr).toBe(0);
    expect(text.stderr.split('\n').filter((l) => l.startsWith('job finished'))).toEqual(['job finished  job=fin']);
    expect(text.stdout).toMatch(/^fin: 1 rows?, 1 file, /);
    const json = await sluice(['run', file, '--log-format', 'json', '--fresh'], { env: { ...env, OUT: join(dir, 'finished.out') } });
    expect(logLines(json.stderr).find((l) => l.msg === 'job finished')).toMatchObject({ job: 'fin', rows: 1, files: 1, outputs: [{ format: 'csv' }] });
  });

  it('validate reports each kind of mistake with file, line, path and what is expected (exit 2)', async () => {
    const good = `jobs:\n  - name: a\n    source: { sql: select 1 }\n    outputs:\n      - format: csv\n        path: ./o\n`;
    const badSettings = await jobFile('bad-settings.yaml', 'engine: { memory_limit: lots }\n');
    const cases: [string, string, RegExp][] = [
      ['settings.yaml', `connection:\n  embedded: { settings: ${badSettings} }\n${good}`, /bad-settings\.yaml: engine\.memory_limit: a size is a number of bytes or a number with a unit/],
      ['unknown.yaml', good.replace('path: ./o', 'path: ./o\n        compresion: zstd'), /unknown\.yaml:7:9 jobs\[0\]\.outputs\[0\]\.compresion: unknown field/],
      ['type.yaml', `${good}    retries: many\n`, /type\.yaml:7:14 jobs\[0\]\.retries: expected number, got string "many"/],
      ['cron.yaml', `${good}    schedule: "every hour"\n`, /cron\.yaml:7:15 jobs\[0\]\.schedule: invalid cron expression "every hour"/],
      ['env.yaml', good.replace('./o', '${NOT_SET_ANYWHERE}'), /env\.yaml:6:15 jobs\[0\]\.outputs\[0\]\.path: environment variable NOT_SET_ANYWHERE is not set/],
      ['enum.yaml', good.replace('format: csv', 'format: parqet'), /enum\.yaml:5:17 jobs\[0\]\.outputs\[0\]\.format: expected one of parquet\|arrow\|csv\|ndjson, got "parqet"/],
      ['workers.yaml', `${good}    workers: 0\n`, /workers\.yaml:7:14 jobs\[0\]\.workers: .*got 0/],
      ['iceberg-csv.yaml', good.replace('path: ./o', 'path: ./o\n        table: iceberg'), /iceberg-csv\.yaml:5:17 jobs\[0\]\.outputs\[0\]\.format: table: iceberg writes Parquet data files: set format: parquet, or drop table: iceberg, got "csv"/],
      [
        'iceberg-stdout.yaml',
        good.replace('format: csv', 'format: parquet').replace('path: ./o', 'path: "-"\n        table: iceberg'),
        /iceberg-stdout\.yaml:6:15 jobs\[0\]\.outputs\[0\]\.path: table: iceberg needs a place for a table \(.*\), not - \(standard output\), got "-"/,
      ],
    ];
    // One process checks every file: each bad one is reported, the good one is ok, the exit code is 2.
    const paths = [];
    for (const [name, text] of cases) paths.push(await jobFile(name, text));
    const result = await sluice(['validate', ...paths, await jobFile('good.yaml', good)]);
    expect(result.code).toBe(2);
    for (const [name, , message] of cases) expect(result.stderr, name).toMatch(message);
    expect(result.stdout).toMatch(/good\.yaml: ok \(1 job: a\)/);
    const ok = await sluice(['validate', await jobFile('good.yaml', good)]);
    expect(ok).toMatchObject({ code: 0 });
    expect(ok.stdout).toMatch(/good\.yaml: ok \(1 job: a\)/);
  });

  it('schema prints a JSON Schema', async () => {
    const result = await sluice(['schema']);
    expect(result.code).toBe(0);
    const schema = JSON.parse(result.stdout) as { $schema: string; properties: Record<string, unknown> };
    expect(schema.$schema).toMatch(/json-schema\.org/);
    expect(Object.keys(schema.properties)).toEqual(['version', 'connection', 'state_dir', 'jobs']);
  });

  it('run writes the outputs, prints the summary on stdout and JSON log lines on stderr (not a terminal)', async () => {
    const out = join(dir, 'run-ok');
    const file = await jobFile(
      'run-ok.yaml',
      `${remote}jobs:\n  - name: events\n    source: { sql: "select id, amount from sample.events" }\n    outputs:\n      - { format: parquet, path: "\${OUT}/parquet", max_rows_per_file: 800 }\n      - { format: ndjson, path: "\${OUT}/ndjson" }\n`,
    );
    const result = await sluice(['run', file], { env: { ...env, OUT: out } });
    expect(result.stderr).not.toMatch(/"level":"error"/);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^events: 2,000 rows, 4 files, [\d.]+ KiB, 10 credits \([\d,]+ left in the cycle\) in 0:\d\d \(execution 01[0-9A-Z]{24}\)\n/);
    expect(result.stdout).toContain(`file://${out}/parquet  parquet  2,000 rows  3 files`);
    const logs = logLines(result.stderr);
    expect(logs.length).toBeGreaterThan(0);
    expect(logs.every((l) => typeof l.time === 'string' && typeof l.level === 'string' && typeof l.msg === 'string')).toBe(true);
    expect(logs.find((l) => l.msg === 'job finished')).toMatchObject({ job: 'events', rows: 2000, files: 4, credits: 10 });
    const [row] = await duck(`select count(*)::int as n from read_parquet('${out}/parquet/*.parquet')`);
    expect(row).toEqual({ n: 2000 });

    const json = await sluice(['run', file, '--json', '--log-format', 'text', '--quiet'], { env: { ...env, OUT: join(dir, 'run-json') } });
    expect(json.code).toBe(0);
    expect(json.stderr).toBe('');
    expect(JSON.parse(json.stdout)).toMatchObject({ job: 'events', rows: 2000, files: 4, credits: 10, resumed: false });
  });

  it('maps failures to exit codes: bad key 3, budget 4, failed SQL 5, unwritable output 6, missing key 2', async () => {
    const job = (source: string, path = '${OUT}/x', extra = '') =>
      `${remote}jobs:\n  - name: j\n    source: { sql: "${source}" }\n    outputs: [{ format: csv, path: "${path}" }]\n${extra}`;
    const run = async (name: string, text: string, extraEnv: Record<string, string | undefined> = {}) =>
      sluice(['run', await jobFile(name, text)], { env: { ...env, OUT: join(dir, `${name}.out`), ...extraEnv } });

    const auth = await run('auth.yaml', job('select 1'), { SERVICE_API_KEY: 'sk_wrong_key_123' });
    expect(auth.code).toBe(3);
    expect(logLines(auth.stderr).find((l) => l.level === 'error')?.msg).toMatch(/401 Invalid API Key/);

    const budget = await run('budget.yaml', job('select 1', '${OUT}/x', '    budget: { max_credits: 5 }\n'));
    expect(budget.code).toBe(4);
    expect(budget.stderr).toMatch(/max_credits 5; nothing was started/);

    const failed = await run('failed.yaml', job('select * from nope_missing'));
    expect(failed.code).toBe(5);
    expect(failed.stderr).toMatch(/nope_missing/);

    const io = await run('io.yaml', job('select 1 as x', '/dev/null/cannot/write'));
    expect(io.code).toBe(6);

    const nokey = await run('nokey.yaml', job('select 1'), { SERVICE_API_KEY: undefined });
    expect(nokey.code).toBe(2);
    expect(nokey.stderr).toMatch(/set the environment variable SERVICE_API_KEY/);

    const badfile = await sluice(['run', join(dir, 'does-not-exist.yaml')]);
    expect(badfile.code).toBe(2);
  });

  it('query prints rows as CSV, NDJSON or a table, and writes a file with --out', async () => {
    const sql = 'select id, name from sample.events where id < 3 order by id';
    const csv = await sluice(['query', sql, '--format', 'csv'], { env });
    expect(csv.code).toBe(0);
    expect(csv.stdout).toBe('id,name\n0,event_0\n1,event_1\n2,event_2\n');
    const ndjson = await sluice(['query', sql, '-f', 'ndjson'], { env });
    expect(ndjson.stdout.trim().split('\n').map((l) => JSON.parse(l) as unknown)).toEqual([
      { id: 0, name: 'event_0' },
      { id: 1, name: 'event_1' },
      { id: 2, name: 'event_2' },
    ]);
    const table = await sluice(['query', sql, '--format', 'table'], { env });
    expect(table.stdout).toBe('id | name\n---+--------\n0  | event_0\n1  | event_1\n2  | event_2\n(3 rows)\n');
    const file = join(dir, 'q.parquet');
    const out = await sluice(['query', 'select * from sample.events', '--out', file], { env });
    expect(out.code).toBe(0);
    const [row] = await duck(`select count(*)::int as n from read_parquet('${file}')`);
    expect(row).toEqual({ n: 2000 });
    const arrowFile = join(dir, 'q.arrows');
    const arrow = await sluice(['query', sql, '--format', 'arrow', '--out', arrowFile], { env });
    expect(arrow.code).toBe(0);
    const ipc = tableFromIPC(await readFile(arrowFile));
    expect(ipc.toArray().map((r) => ({ id: Number(r.id), name: r.name as string }))).toEqual([
      { id: 0, name: 'event_0' },
      { id: 1, name: 'event_1' },
      { id: 2, name: 'event_2' },
    ]);
    const bad = await sluice(['query', 'select nope from nowhere', '--format', 'csv'], { env });
    expect(bad.code).toBe(5);
  });

  it('status, results and cancel work on an execution id', async () => {
    const client = new ServiceClient({ baseUrl: svc.url, apiKey: svc.keys.demo.admin, env: {} });
    try {
      const done = await client.execute({ sql: 'select 42 as answer' });
      await done.wait();
      const status = await sluice(['status', done.id], { env });
      expect(status.code).toBe(0);
      expect(JSON.parse(status.stdout)).toMatchObject({ execution_id: done.id, state: 'QUERY_STATE_COMPLETED' });
      const results = await sluice(['results', done.id, '--format', 'csv'], { env });
      expect(results.stdout).toBe('answer\n42\n');
      const slow = await client.execute({ sql: 'select sum(a.i * b.i) from range(100000) a(i), range(100000) b(i)' });
      const cancel = await sluice(['cancel', slow.id], { env });
      expect(cancel.code).toBe(0);
      expect(JSON.parse(cancel.stdout)).toMatchObject({ execution_id: slow.id, cancelled: true, state: 'QUERY_STATE_CANCELLED' });
    } finally {
      await client.close();
    }
  });

  it('the quickstart: run starts the embedded service and writes Parquet under ./out with a summary', async () => {
    const cwd = await mkdtemp(join(tmpdir(), 'sluice-quickstart-'));
    try {
      const result = await sluice(['run', join(ROOT, 'config/examples/quickstart.yaml')], { cwd, env: { SLUICE_SAMPLE_ROWS: '5000' } });
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/^quickstart: 5,000 rows, 1 file, [\d.]+ KiB, 10 credits \([\d,]+ left in the cycle\) in/);
      expect(logLines(result.stderr).some((l) => l.msg === 'started the embedded local service')).toBe(true);
      const [row] = await duck(`select count(*)::int as n from read_parquet('${cwd}/out/quickstart/*.parquet')`);
      expect(row).toEqual({ n: 5000 });
    } finally {
      await rm(cwd, { recursive: true, force: true });
    }
  });

  it('SIGTERM during a run keeps the execution for the next run and exits 130', async () => {
    const file = await jobFile(
      'slow.yaml',
      `${remote}jobs:\n  - name: slow\n    source: { sql: "select sum(a.i * b.i) as s from range(100000) a(i), range(100000) b(i)" }\n    outputs: [{ format: csv, path: "\${OUT}/slow" }]\n`,
    );
    const proc = startSluice(['run', file], { env: { ...env, OUT: join(dir, 'slow') } });
    const id = await startedExecutionId(proc);
    const { result, ms } = await terminate(proc);
    expect(result.code).toBe(130);
    expect(ms).toBeLessThan(10_000);
    expect(await executionState(svc.url, svc.keys.demo.admin, id)).toMatch(/^QUERY_STATE_(PENDING|EXECUTING)$/);
    expect(logLines(result.stderr).some((l) => l.msg === 'interrupted')).toBe(true);
    expect(logLines(result.stderr).find((l) => /^stopped: kept execution/.test(String(l.msg)))).toMatchObject({ execution_id: id });
    // It would run for minutes: cancelled by hand.
    expect((await startSluice(['cancel', id], { env }).done).code).toBe(0);
  });

  it('serve takes --help like every other command', async () => {
    const help = await sluice(['serve', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: sluice serve \[options\]\n/);
    // The embedded service's directory, so jobs without a base_url find what serve stored.
    expect(help.stdout).toMatch(/--data-dir DIR +Where queries, executions and results are kept .*\(default: \.sluice\/service\)/);
  });

  it('views upsert/list/get/refresh/delete, and a job whose source is a view refresh exports the view', async () => {
    const created = await sluice(['queries', 'create', '--name', 'by-day', '--sql', "select date '2026-01-01' + (id % 365)::integer as day, count(*)::bigint as n from sample.events group by 1 order by 1"], { env });
    expect(created.code).toBe(0);
    const { query_id } = JSON.parse(created.stdout) as { query_id: number };

    const upsert = await sluice(['views', 'upsert', 'result_cli_days', '--query-id', String(query_id), '--cron', '0 3 * * *'], { env });
    expect(upsert.stderr).not.toMatch(/"level":"error"/);
    expect(upsert.code).toBe(0);
    const view = JSON.parse(upsert.stdout) as { name: string };
    expect(view.name).toMatch(/result_cli_days$/);
    const full = view.name;
    const listed = await sluice(['views', 'list', '--json'], { env });
    expect(listed.code).toBe(0);
    expect((JSON.parse(listed.stdout) as { materialized_views: { name: string }[] }).materialized_views.map((v) => v.name)).toContain(full);
    const table = await sluice(['views', 'list'], { env });
    expect(table.stdout).toMatch(/^name +\| query_id +\| cron /);
    expect(table.stdout).toContain('0 3 * * *');
    const got = await sluice(['views', 'get', full], { env });
    expect(JSON.parse(got.stdout)).toMatchObject({ name: full, query_id, cron_expression: '0 3 * * *' });
    const refreshed = await sluice(['views', 'refresh', 'result_cli_days', '--wait'], { env });
    expect(refreshed.code, refreshed.stderr).toBe(0);
    expect(JSON.parse(refreshed.stdout)).toMatchObject({ execution_id: expect.stringMatching(/^01/), state: 'QUERY_STATE_COMPLETED' });
    const badTier = await sluice(['views', 'refresh', 'result_cli_days', '--performance', 'huge'], { env });
    expect(badTier.code).toBe(2);
    expect(badTier.stderr).toContain('--performance must be one of small, medium, large, free, got "huge"');

    // A job: refresh the view, then export what the refresh produced.
    const out = join(dir, 'view-job');
    const file = await jobFile(
      'view.yaml',
      `${remote}jobs:
  - name: days
    source: { view_refresh: { name: result_cli_days } }
    outputs: [{ format: parquet, path: "\${OUT}/days" }]
`,
    );
    const run = await sluice(['run', file, '--json'], { env: { ...env, OUT: out } });
    expect(run.stderr).not.toMatch(/"level":"error"/);
    expect(run.code).toBe(0);
    const summary = JSON.parse(run.stdout) as { rows: number; executionId: string; credits: number };
    expect(summary.rows).toBe(365);
    const written = await duck(`select day::varchar as day, n::int as n from read_parquet('${out}/days/*.parquet') order by day`);
    const viaQuery = await sluice(['query', `select day::varchar as day, n from ${full} order by day`, '--format', 'ndjson'], { env });
    expect(viaQuery.code).toBe(0);
    expect(written).toEqual(viaQuery.stdout.trim().split('\n').map((l) => {
      const r = JSON.parse(l) as { day: string; n: number };
      return { day: r.day, n: Number(r.n) };
    }));
    expect(written.reduce((n, r) => n + (r.n as number), 0)).toBe(2000);

    const deleted = await sluice(['views', 'delete', full], { env });
    expect(deleted.code).toBe(0);
    const gone = await sluice(['views', 'get', full], { env });
    expect(gone.code).toBe(2);
    expect(gone.stderr).toMatch(/404/);
  });

  it('queries create/get/update/archive and upload talk to the service', async () => {
    const created = await sluice(['queries', 'create', '--name', 'n', '--sql', 'select {{k}} as k', '--param', 'k:number=3'], { env });
    expect(created.code).toBe(0);
    const { query_id } = JSON.parse(created.stdout) as { query_id: number };
    const got = await sluice(['queries', 'get', String(query_id)], { env });
    expect(JSON.parse(got.stdout)).toMatchObject({ query_id, name: 'n', parameters: [{ key: 'k', type: 'number', value: 3 }] });
    const updated = await sluice(['queries', 'update', String(query_id), '--name', 'renamed'], { env });
    expect(updated.code).toBe(0);
    expect(JSON.parse((await sluice(['queries', 'get', String(query_id)], { env })).stdout)).toMatchObject({ name: 'renamed' });
    const archived = await sluice(['queries', 'archive', String(query_id)], { env });
    expect(archived.code).toBe(0);
    expect(JSON.parse((await sluice(['queries', 'get', String(query_id)], { env })).stdout)).toMatchObject({ is_archived: true });
    const badParam = await sluice(['queries', 'create', '--name', 'n', '--sql', 'x', '--param', 'oops'], { env });
    expect(badParam.code).toBe(2);
    expect(badParam.stderr).toContain('--param must look like KEY:TYPE=DEFAULT');

    const csvFile = join(dir, 'up.csv');
    await writeFile(csvFile, 'a,b\n1,x\n2,y\n');
    const upload = await sluice(['upload', csvFile, '--table', 'cli_up'], { env });
    expect(upload.code, upload.stderr).toBe(0);
    expect(JSON.parse(upload.stdout)).toMatchObject({ success: true, table_name: expect.stringMatching(/dataset_cli_up$/) });
    expect((await sluice(['upload', csvFile], { env })).code).toBe(2);
    expect(await readFile(csvFile, 'utf8')).toContain('1,x');
  });
});
