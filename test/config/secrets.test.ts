import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtins } from '../../connectors/index.ts';
import { parseJobFile } from '../../src/config/index.ts';
import { resolveOutput } from '../../src/export/index.ts';
import { ConfigError, redact } from '../../src/kit/index.ts';
import { sluice } from '../cli/sluiceProcess.ts';

// Credentials never reach an error, a log line, a summary or --json output. Every path that echoes
// configuration is tried with secrets planted where a user puts them; none may come back.

const KEY_ID = 'AKIAPLANTEDKEYID0001';
const SECRET = 'planted/Secret+Access+Key+0123456789abcdefgh';
const TOKEN = 'PlantedSessionToken0123456789';
const PLANTED = [KEY_ID, SECRET, TOKEN, SECRET.slice(0, 12)];
const s3Block = `{ access_key_id: ${KEY_ID}, secret_access_key: "${SECRET}", session_token: ${TOKEN} }`;

function messageOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    return `${(error as Error).message}\n${JSON.stringify(error)}`;
  }
  throw new Error('expected an error');
}

const load = (outputs: string, connection = '') => () =>
  parseJobFile(`${connection}jobs:\n  - name: j\n    source: { sql: select 1 }\n    outputs:\n${outputs}`, { file: 'jobs.yaml', registry: builtins, env: {} });

function expectNoSecret(text: string): void {
  for (const secret of PLANTED) expect(text).not.toContain(secret);
}

describe('no credential in what sluice prints', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-secrets-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('job file errors: an s3 block on a local path, a bad value beside the keys, keys of the wrong type, a wrong branch', () => {
    const cases = [
      load(`      - { format: csv, path: ./out, s3: ${s3Block} }\n`),
      load(`      - { format: csv, path: "s3://b/x", s3: { access_key_id: ${KEY_ID}, secret_access_key: "${SECRET}", session_token: ${TOKEN}, storage_class: COLD } }\n`),
      load(`      - { format: csv, path: "s3://B/x", s3: ${s3Block} }\n`),
      load(`      - { format: csv, path: "s3://b/x", s3: { access_key_id: [${KEY_ID}], secret_access_key: { value: "${SECRET}" } } }\n`),
      load(`      - { format: xlsx, path: "s3://b/x", s3: ${s3Block} }\n`),
      load(`      - { path: "s3://b/x", s3: ${s3Block} }\n`),
      load(`      - { format: csv, path: ./out }\n`, `connection: { base_url: "ftp://user:${SECRET}@host/api" }\n`),
    ];
    for (const run of cases) {
      const text = messageOf(run);
      expect(text).toMatch(/jobs\.yaml:\d+:\d+/);
      expectNoSecret(text);
    }
    expect(messageOf(cases[0]!)).toContain('"secret_access_key":"[redacted]"');
  });

  it('resolveOutput (the library path): the message and the issues of the ConfigError', () => {
    const error = (() => {
      try {
        resolveOutput({ format: 'csv', path: './out', s3: { access_key_id: KEY_ID, secret_access_key: SECRET, session_token: TOKEN } }, builtins);
      } catch (e) {
        return e as ConfigError;
      }
      throw new Error('expected a ConfigError');
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expectNoSecret(error.message);
    expectNoSecret(JSON.stringify(error.issues));
    expect(error.issues[0]!.value).toEqual({ access_key_id: '[redacted]', secret_access_key: '[redacted]', session_token: '[redacted]' });
  });

  it('redact works by field name at any depth, masks URL passwords, and keeps what names a variable', () => {
    expect(redact({ a: { password: 'x', api_key_env: 'MY_KEY', list: [{ token: 't' }] }, url: 'https://u:pw@h/x' })).toEqual({
      a: { password: '[redacted]', api_key_env: 'MY_KEY', list: [{ token: '[redacted]' }] },
      url: 'https://u:[redacted]@h/x',
    });
    expect(redact('plain', 's3.secret_access_key')).toBe('[redacted]');
  });

  it('sluice validate and sluice run (text and --json, logs as JSON): a job file with planted keys that fails', async () => {
    const file = join(dir, 'jobs.yaml');
    await writeFile(file, `jobs:\n  - name: j\n    source: { sql: select 1 }\n    outputs:\n      - { format: csv, path: ./out, s3: ${s3Block} }\n`);
    const validate = await sluice(['validate', file], { cwd: dir });
    expect(validate.code).toBe(2);
    expect(validate.stderr).toContain('s3 settings apply only to');
    expectNoSecret(validate.stdout + validate.stderr);
    for (const args of [['run', file], ['run', file, '--json', '--log-format', 'json']]) {
      const run = await sluice(args, { cwd: dir });
      expect(run.code).toBe(2);
      expectNoSecret(run.stdout + run.stderr);
    }
  });

  it('sluice run whose S3 destination fails after the query ran: log lines, summary and --json', async () => {
    const file = join(dir, 'runtime.yaml');
    const s3 = `{ endpoint: "http://127.0.0.1:1", region: us-east-1, force_path_style: true, access_key_id: ${KEY_ID}, secret_access_key: "${SECRET}", session_token: ${TOKEN} }`;
    await writeFile(file, `connection: { embedded: { sample_rows: 10 } }\njobs:\n  - name: j\n    source: { sql: select 1 as n }\n    outputs:\n      - { format: csv, path: "s3://bucket/x", s3: ${s3} }\n`);
    const run = await sluice(['run', file, '--json', '--log-format', 'json'], { cwd: dir });
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('s3://bucket/x');
    expectNoSecret(run.stdout + run.stderr);
  });
});
