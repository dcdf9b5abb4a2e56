import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { JobFileError, loadJobFile, parseJobFile } from '../../src/config/index.ts';
import { builtins } from '../../connectors/index.ts';

function messages(text: string, env: Record<string, string> = {}): string[] {
  try {
    parseJobFile(text, { file: 'jobs.yaml', registry: builtins, env });
  } catch (error) {
    expect(error).toBeInstanceOf(JobFileError);
    return (error as JobFileError).message.split('\n');
  }
  throw new Error('expected the job file to be rejected');
}

const base = (extra = '', output = '      - format: parquet\n        path: ./out\n') =>
  `jobs:\n  - name: events\n    source:\n      sql: select 1\n    outputs:\n${output}${extra}`;

describe('parseJobFile', () => {
  it('accepts a complete job file and keeps what was written', () => {
    const file = parseJobFile(
      `version: 1
connection:
  base_url: http://127.0.0.1:8080
  api_key_env: MY_KEY
state_dir: /tmp/state
jobs:
  - name: events-daily
    source:
      latest: { query_id: 7, parameters: { day: "2026-01-01", n: 3 }, max_age_hours: 24 }
    performance: large
    result: { columns: [a, b], filters: "a > 1", sort_by: a desc }
    outputs:
      - format: csv
        format_options: { delimiter: ";" }
        path: s3://bucket/prefix
        s3: { region: eu-west-1 }
      - format: parquet
        path: ./out
        partition_by: [b]
        max_rows_per_file: 1000
    schedule: "*/15 * * * *"
    concurrency: 8
    wire: json
    retries: 2
    budget: { max_credits: 20, max_bytes: 1000000 }
`,
      { file: 'jobs.yaml', registry: builtins, env: {} },
    );
    const job = file.jobs[0]!;
    expect(file.connection?.api_key_env).toBe('MY_KEY');
    expect(job.source).toEqual({ latest: { query_id: 7, parameters: { day: '2026-01-01', n: 3 }, max_age_hours: 24 } });
    expect(job.outputs).toHaveLength(2);
    expect(job.budget).toEqual({ max_credits: 20, max_bytes: 1000000 });
    expect(job.wire).toBe('json');
  });

  it('interpolates ${VAR} and ${VAR:-default}; an unquoted number stays a number, a quoted one a string', () => {
    const file = parseJobFile(
      base('', `      - format: csv\n        path: \${OUT:-./fallback}/\${NAME}\n        max_rows_per_file: \${ROWS:-500}\n        format_options:\n          delimiter: "\${DELIM}"\n`),
      { file: 'jobs.yaml', registry: builtins, env: { NAME: 'x', DELIM: '7' } },
    );
    const output = file.jobs[0]!.outputs[0]!;
    expect(output.path).toBe('./fallback/x');
    expect(output.maxRowsPerFile).toBe(500);
    expect(output.formatConfig).toMatchObject({ delimiter: '7' });
  });

  it('leaves comments alone and reads $${X} as a literal ${X}', () => {
    const file = parseJobFile(`# uses \${UNSET_IN_A_COMMENT}\n${base('    description: cost $${DOLLARS}\n')}`, { file: 'jobs.yaml', registry: builtins, env: {} });
    expect(file.jobs[0]!.description).toBe('cost ${DOLLARS}');
  });

  it('a variable that is not set names the variable, the field and the line', () => {
    expect(messages(base('', '      - format: parquet\n        path: ${OUT_DIR}/events\n'))).toEqual([
      'jobs.yaml:7:15 jobs[0].outputs[0].path: environment variable OUT_DIR is not set (set it, or give a default: ${OUT_DIR:-value})',
    ]);
  });

  it('an unknown field names the path and line and suggests the close spelling', () => {
    expect(messages(base('', '      - format: parquet\n        path: ./out\n        max_row_per_file: 10\n'))).toEqual([
      'jobs.yaml:8:9 jobs[0].outputs[0].max_row_per_file: unknown field, did you mean "max_rows_per_file"?',
    ]);
    expect(messages(base('    colour: red\n'))[0]).toMatch(/^jobs\.yaml:8:5 jobs\[0\]\.colour: unknown field \(allowed: name, description, source/);
  });

  it('a wrong value says what is expected and what was found', () => {
    expect(messages(base('', '      - format: parqet\n        path: ./out\n'))).toEqual([
      'jobs.yaml:6:17 jobs[0].outputs[0].format: expected one of parquet|arrow|csv|ndjson, got "parqet"',
    ]);
    expect(messages(base('    retries: three\n'))).toEqual(['jobs.yaml:8:14 jobs[0].retries: expected number, got string "three"']);
    expect(messages(base('    performance: huge\n'))).toEqual(['jobs.yaml:8:18 jobs[0].performance: expected one of small|medium|large|free, got "huge"']);
    expect(messages(base('    wire: avro\n'))).toEqual(['jobs.yaml:8:11 jobs[0].wire: expected one of auto|json|arrow, got "avro"']);
    const rate = (value: string) => messages(`connection:\n  rate_limit: ${value}\n${base()}`);
    expect(rate('gold')).toEqual(['jobs.yaml:2:15 connection.rate_limit: expected one of free|plus|enterprise, got "gold"']);
    expect(rate('{read: 0}')).toEqual(['jobs.yaml:2:22 connection.rate_limit.read: expected number to be >0, got 0']);
    expect(rate('{reads: 5}')).toEqual(['jobs.yaml:2:16 connection.rate_limit.reads: unknown field, did you mean "read"?']);
    expect(messages(`connection:\n  compression: gzip\n${base()}`)).toEqual(['jobs.yaml:2:16 connection.compression: expected one of auto|on|off, got "gzip"']);
  });

  it('every error of a file in one pass: a bad format hides no unknown field, a schema error no output error', () => {
    expect(messages(base('', '      - format: parqet\n        path: ./out\n        max_row_per_file: 10\n        colour: red\n'))).toEqual([
      'jobs.yaml:6:17 jobs[0].outputs[0].format: expected one of parquet|arrow|csv|ndjson, got "parqet"',
      'jobs.yaml:8:9 jobs[0].outputs[0].max_row_per_file: unknown field, did you mean "max_rows_per_file"?',
      expect.stringMatching(/^jobs\.yaml:9:9 jobs\[0\]\.outputs\[0\]\.colour: unknown field \(allowed: format, format_options, path, /),
    ]);
    // A field of the job (the schema) and an output's destination block (resolved against the
    // sinks) wrong in the same file: both at once.
    const both = messages(base('    retries: three\n', '      - format: csv\n        path: ./out\n        s3: { region: eu-west-1 }\n'));
    expect(both).toEqual([
      'jobs.yaml:9:14 jobs[0].retries: expected number, got string "three"',
      expect.stringMatching(/^jobs\.yaml:8:13 jobs\[0\]\.outputs\[0\]\.s3: s3 settings apply only to s3:\/\//),
    ]);
  });

  it('a bad cron expression names the path and the problem', () => {
    const [line] = messages(base('    schedule: "61 * * * *"\n'));
    expect(line).toMatch(/^jobs\.yaml:8:15 jobs\[0\]\.schedule: invalid cron expression "61 \* \* \* \*": .*minute/);
  });

  it('a source must be exactly one of the four kinds; a source with a bad field reports that field', () => {
    expect(messages('jobs:\n  - name: a\n    source: {}\n    outputs: [{format: csv, path: ./o}]\n')).toEqual([
      'jobs.yaml:3:13 jobs[0].source: expected one of {sql} | {query_id, parameters} | {latest} | {view_refresh}, got {}',
    ]);
    expect(messages('jobs:\n  - name: a\n    source: {query_id: "7"}\n    outputs: [{format: csv, path: ./o}]\n')).toEqual([
      'jobs.yaml:3:24 jobs[0].source.query_id: expected number, got string "7"',
    ]);
  });

  it('a missing required field points at the mapping that lacks it', () => {
    expect(messages('jobs:\n  - name: a\n    source: {sql: x}\n')).toEqual(['jobs.yaml:2:5 jobs[0].outputs: required (array)']);
  });

  it('rejects duplicate job names and two outputs into the same path', () => {
    const text = `${base()}  - name: events\n    source: {sql: x}\n    outputs:\n      - {format: csv, path: ./a}\n      - {format: ndjson, path: ./a/}\n`;
    expect(messages(text)).toEqual([
      'jobs.yaml:12:32 jobs[1].outputs[1].path: same path as outputs[0].path: each output needs its own directory or prefix',
      'jobs.yaml:8:11 jobs[1].name: duplicate job name "events" (also jobs[0].name)',
    ]);
  });

  it('reports YAML syntax errors with their line, and an empty file', () => {
    expect(messages('jobs:\n  - name: a\n   bad: [\n')[0]).toMatch(/^jobs\.yaml:\d+:\d+ YAML syntax: /);
    expect(messages('')).toEqual(['jobs.yaml:1:1 the file is empty (expected a mapping with `jobs:`)']);
    expect(messages('jobs:\n  - name: a\n    name: b\n')[0]).toMatch(/^jobs\.yaml:3:5 YAML syntax: Map keys must be unique/);
  });
});

describe('loadJobFile', () => {
  it('reads a file and names it in errors; a missing file is a JobFileError', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sluice-config-'));
    try {
      const path = join(dir, 'jobs.yaml');
      await writeFile(path, base('    retries: -1\n'));
      await expect(loadJobFile(path, { registry: builtins, env: {} })).rejects.toThrow(`${path}:8:14 jobs[0].retries: expected number to be >=0, got -1`);
      await expect(loadJobFile(join(dir, 'nope.yaml'), { registry: builtins, env: {} })).rejects.toThrow(/nope\.yaml cannot read the job file: no such file/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
