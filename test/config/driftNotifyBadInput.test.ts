import { describe, expect, it } from 'vitest';
import { builtins } from '../../connectors/index.ts';
import { JobFileError, parseJobFile } from '../../src/config/index.ts';
import type { DriftOutput } from '../../src/jobs/drift/drift.ts';

const ENV = { HOOK_SECRET: 'a-secret-of-twenty-chars' };

/** The messages a job file is rejected with; `job` holds the lines of one job after its name (line 3 on). */
function messages(job: string): string[] {
  try {
    parseJobFile(`jobs:\n  - name: drifty\n${job}`, { file: 'jobs.yaml', registry: builtins, env: ENV });
  } catch (error) {
    expect(error).toBeInstanceOf(JobFileError);
    return (error as JobFileError).message.split('\n');
  }
  throw new Error('expected the job file to be rejected');
}

const SOURCE = '    source: { sql: select 1 }\n';
const OUTPUT = '    outputs: [{ format: csv, path: ./out }]\n';

describe('schema_drift and notify: accepted as written', () => {
  it('keeps the job default, each output its own, and the webhook with its secret from the environment', () => {
    const file = parseJobFile(
      `jobs:\n  - name: ok\n${SOURCE}    schema_drift: fail\n    outputs:\n      - { format: csv, path: ./a }\n      - { format: parquet, path: ./b, schema_drift: freeze }\n    notify:\n      webhook: { url: "https://hooks.example.com/x?token=t", secret: "\${HOOK_SECRET}", events: [failure, drift, success], retries: 2, timeout_seconds: 5 }\n`,
      { file: 'jobs.yaml', registry: builtins, env: ENV },
    );
    const job = file.jobs[0]!;
    expect(job.schema_drift).toBe('fail');
    expect(job.outputs.map((o) => (o as DriftOutput).schemaDrift)).toEqual([undefined, 'freeze']);
    expect(job.notify).toEqual({ webhook: { url: 'https://hooks.example.com/x?token=t', secret: ENV.HOOK_SECRET, events: ['failure', 'drift', 'success'], retries: 2, timeout_seconds: 5 } });
  });

  it('takes freeze and fail on an Iceberg table in a REST catalog (its schema is read from the catalog before the fetch)', () => {
    const rest = '    outputs:\n      - format: parquet\n        path: ./lake/t\n        table: iceberg\n        catalog: { type: rest, uri: "http://127.0.0.1:1/catalog", namespace: [n], table: t }\n';
    for (const policy of ['freeze', 'fail']) {
      const job = parseJobFile(`jobs:\n  - name: ok\n${SOURCE}    schema_drift: ${policy}\n${rest}`, { file: 'jobs.yaml', registry: builtins, env: ENV }).jobs[0]!;
      expect(job.schema_drift).toBe(policy);
    }
  });
});

describe('schema_drift: bad input with FILE:LINE:COL', () => {
  it('a policy that does not exist, on the job and on an output', () => {
    expect(messages(`${SOURCE}    schema_drift: loose\n${OUTPUT}`)).toEqual(['jobs.yaml:4:19 jobs[0].schema_drift: expected one of evolve|freeze|fail, got "loose"']);
    expect(messages(`${SOURCE}    outputs: [{ format: csv, path: ./out, schema_drift: true }]\n`)).toEqual(['jobs.yaml:4:57 jobs[0].outputs[0].schema_drift: expected one of evolve|freeze|fail, got true']);
  });
});

describe('notify: bad input with FILE:LINE:COL', () => {
  const notify = (webhook: string) => messages(`${SOURCE}${OUTPUT}    notify:\n      webhook: ${webhook}\n`);

  it('a url that is not http(s), a missing url', () => {
    expect(notify('{ url: "ftp://hooks.example.com/x" }')).toEqual(['jobs.yaml:6:23 jobs[0].notify.webhook.url: expected an http:// or https:// URL, e.g. https://hooks.example.com/sluice, got "ftp://hooks.example.com/x"']);
    expect(notify('{ events: [failure] }')).toEqual(['jobs.yaml:6:16 jobs[0].notify.webhook.url: required (string)']);
  });

  it('a short secret, without echoing it', () => {
    const lines = notify('{ url: "https://hooks.example.com/x", secret: "short-one" }');
    expect(lines).toEqual(['jobs.yaml:6:62 jobs[0].notify.webhook.secret: at least 16 characters; give it from the environment, e.g. secret: ${SLUICE_WEBHOOK_SECRET}, got "[redacted]"']);
    expect(lines.join('\n')).not.toContain('short-one');
  });

  it('an event that does not exist, a repeated one, none', () => {
    expect(notify('{ url: "https://h.example.com", events: [failure, retry] }')).toEqual(['jobs.yaml:6:66 jobs[0].notify.webhook.events[1]: expected one of failure|drift|success, got "retry"']);
    expect(notify('{ url: "https://h.example.com", events: [drift, drift] }')).toEqual(['jobs.yaml:6:56 jobs[0].notify.webhook.events: events must not repeat']);
    expect(notify('{ url: "https://h.example.com", events: [] }')).toEqual(['jobs.yaml:6:56 jobs[0].notify.webhook.events: expected array to have >=1 items, got []']);
  });

  it('retries and timeout out of range, an unknown field', () => {
    expect(notify('{ url: "https://h.example.com", retries: 11 }')).toEqual(['jobs.yaml:6:57 jobs[0].notify.webhook.retries: expected number to be <=10, got 11']);
    expect(notify('{ url: "https://h.example.com", timeout_seconds: 0 }')).toEqual(['jobs.yaml:6:65 jobs[0].notify.webhook.timeout_seconds: expected number to be >0, got 0']);
    expect(notify('{ url: "https://h.example.com", retry: 2 }')).toEqual(['jobs.yaml:6:48 jobs[0].notify.webhook.retry: unknown field (allowed: url, secret, events, retries, timeout_seconds)']);
  });
});
