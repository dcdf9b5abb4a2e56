import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFile } from 'node:fs/promises';
import { PassThrough } from 'node:stream';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtins } from '../../connectors/index.ts';
import { runCli } from '../../src/cli/commands/index.ts';
import type { CliIo, OutputStream } from '../../src/cli/io.ts';
import { parseJobFile, type Job } from '../../src/config/index.ts';
import type { Delivery, NotificationBody } from '../../src/jobs/run/notify.ts';
import { notifyingEvents, verifySignature } from '../../src/jobs/run/notify.ts';
import type { OutputDrift } from '../../src/jobs/drift/drift.ts';
import { runJob } from '../../src/jobs/run/runJob.ts';
import { client, dir, svc, useJobHarness } from './jobHarness.ts';

useJobHarness({ sampleRows: 500, limits: { page_rows: 250 } }, 'sluice-notify-');

const SECRET = 'whsec-local-receiver-0123456789';
const TOKEN = 'path-token-not-for-logs';

interface Received {
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** A webhook receiver on 127.0.0.1:0: it records every request and answers with the next status of `answers` (then 200). */
async function startReceiver(answers: number[] = []) {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(answers.shift() ?? 200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/hooks/${TOKEN}`, received, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** A port nothing listens on: a receiver that is down. */
async function downUrl(): Promise<string> {
  const r = await startReceiver();
  await r.close();
  return r.url;
}

function job(yaml: string, url: string): Job {
  return parseJobFile(`jobs:\n${yaml}`, { file: 'test.yaml', registry: builtins, env: { DIR: dir, HOOK_URL: url, HOOK_SECRET: SECRET } }).jobs[0]!;
}

async function run(j: Job) {
  const deliveries: Delivery[] = [];
  const warnings: { message: string; fields: Record<string, unknown> }[] = [];
  const outcome = await runJob(j, {
    client,
    stateDir: join(dir, 'state'),
    signal: new AbortController().signal,
    events: { onNotification: (d) => deliveries.push(d), onWarning: (message, fields) => warnings.push({ message, fields }) },
  }).then(
    (summary) => ({ summary, error: undefined }),
    (error: unknown) => ({ summary: undefined, error }),
  );
  return { ...outcome, deliveries, warnings };
}

const hook = (events: string, extra = '') => `    notify: { webhook: { url: "\${HOOK_URL}", secret: "\${HOOK_SECRET}", events: [${events}]${extra} } }\n`;

describe('notify: webhook', () => {
  it('a failed run POSTs one signed failure event; the receiver verifies it, and refuses it tampered, with another secret or replayed late', async () => {
    const receiver = await startReceiver();
    try {
      const r = await run(job(`  - name: broken\n    source: { sql: "select * from no_such_table" }\n    outputs: [{ format: csv, path: "\${DIR}/broken" }]\n${hook('failure')}`, receiver.url));
      expect(r.error).toBeDefined();
      expect(receiver.received).toHaveLength(1);
      const [{ headers, body }] = receiver.received as [Received];
      expect(headers['content-type']).toBe('application/json');
      expect(headers['sluice-event']).toBe('failure');
      const signature = headers['sluice-signature'] as string;
      expect(signature).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
      expect(verifySignature(SECRET, signature, body)).toBe(true);
      expect(verifySignature('another-secret-of-length', signature, body)).toBe(false);
      expect(verifySignature(SECRET, signature, body.replace('broken', 'brokeN'))).toBe(false);
      expect(verifySignature(SECRET, signature, body, new Date(Date.now() + 10 * 60_000))).toBe(false);
      const parsed = JSON.parse(body) as NotificationBody;
      expect(parsed).toMatchObject({ version: 1, event: 'failure', job: 'broken', attempts: 1, error: { code: (r.error as { code: string }).code, message: (r.error as Error).message } });
      expect(parsed.run_id).toMatch(/^[0-9a-f-]{36}$/);
      expect(Date.parse(parsed.ended_at!)).toBeGreaterThanOrEqual(Date.parse(parsed.started_at));
      expect(r.deliveries).toEqual([{ event: 'failure', delivered: true, attempts: 1, status: 200 }]);
    } finally {
      await receiver.close();
    }
  });

  it('5xx answers are retried with backoff, each try signed afresh under one delivery id; a 4xx is not retried', async () => {
    const receiver = await startReceiver([503, 502]);
    try {
      const r = await run(job(`  - name: fine\n    source: { sql: "select id from sample.events" }\n    outputs: [{ format: csv, path: "\${DIR}/fine" }]\n${hook('success, failure')}`, receiver.url));
      expect(r.summary).toMatchObject({ rows: 500 });
      expect(r.deliveries).toEqual([{ event: 'success', delivered: true, attempts: 3, status: 200 }]);
      expect(receiver.received).toHaveLength(3);
      expect(new Set(receiver.received.map((x) => x.headers['sluice-delivery'])).size).toBe(1);
      for (const x of receiver.received) expect(verifySignature(SECRET, x.headers['sluice-signature'] as string, x.body)).toBe(true);
      expect(JSON.parse(receiver.received[2]!.body)).toMatchObject({ event: 'success', result: { rows: 500, files: 1 } });
    } finally {
      await receiver.close();
    }
    const refusing = await startReceiver([400]);
    try {
      const r = await run(job(`  - name: fine\n    source: { sql: "select id from sample.events" }\n    outputs: [{ format: csv, path: "\${DIR}/fine" }]\n${hook('success')}`, refusing.url));
      expect(r.deliveries).toEqual([{ event: 'success', delivered: false, attempts: 1, status: 400, error: 'HTTP 400' }]);
      expect(refusing.received).toHaveLength(1);
    } finally {
      await refusing.close();
    }
  });

  it('a receiver that is down does not fail the run: the tries are counted and the failure logged without the path or the secret', async () => {
    const url = await downUrl();
    const r = await run(job(`  - name: unheard\n    source: { sql: "select id from sample.events" }\n    outputs: [{ format: csv, path: "\${DIR}/unheard" }]\n${hook('success', ', retries: 1')}`, url));
    expect(r.error).toBeUndefined();
    expect(r.summary).toMatchObject({ rows: 500 });
    expect(r.deliveries).toEqual([{ event: 'success', delivered: false, attempts: 2, error: 'ECONNREFUSED' }]);
    expect(r.warnings).toEqual([{ message: 'notification not delivered', fields: { event: 'success', webhook: new URL(url).origin, attempts: 2, error: 'ECONNREFUSED' } }]);
    expect(JSON.stringify(r.warnings)).not.toContain(TOKEN);
  });

  it('a schema drift is sent with its details', async () => {
    const receiver = await startReceiver();
    try {
      const yaml = (columns: string) => `  - name: drifting\n    source: { sql: "select ${columns} from sample.events" }\n    outputs: [{ format: parquet, path: "\${DIR}/drifting" }]\n${hook('drift')}`;
      await run(job(yaml('id'), receiver.url));
      expect(receiver.received).toHaveLength(0);
      const r = await run(job(yaml('id, name'), receiver.url));
      expect(r.summary).toMatchObject({ rows: 500, drift: [{ action: 'evolved' }] });
      expect(receiver.received).toHaveLength(1);
      const body = JSON.parse(receiver.received[0]!.body) as NotificationBody;
      expect(body).toMatchObject({
        event: 'drift',
        job: 'drifting',
        execution_id: r.summary!.executionId,
        drift: { output: 0, url: join(dir, 'drifting'), policy: 'evolve', action: 'evolved', changes: [{ column: 'name', change: 'added', to: 'varchar' }] },
      });
    } finally {
      await receiver.close();
    }
  });
});

describe('notify: the secret and the hook path stay out of what sluice prints', () => {
  function capture(): OutputStream & { text(): string } {
    const chunks: Buffer[] = [];
    return { isTTY: false, write: (c: string | Uint8Array) => (chunks.push(Buffer.from(c)), true), once: () => undefined, text: () => Buffer.concat(chunks).toString('utf8') };
  }

  it('sluice run (JSON logs, a receiver down) and sluice run --plan', async () => {
    const url = await downUrl();
    const file = join(dir, 'hooked.yaml');
    await writeFile(
      file,
      `connection:\n  base_url: \${SERVICE_BASE_URL}\nstate_dir: \${DIR}/cli-state\njobs:\n  - name: hooked\n    source: { sql: "select id from sample.events" }\n    outputs: [{ format: csv, path: "\${DIR}/hooked" }]\n${hook('success, failure', ', retries: 0')}`,
    );
    for (const args of [['run', file, '--log-format', 'json'], ['run', file, '--plan', '--json'], ['validate', file]]) {
      const out = capture();
      const err = capture();
      const stdin = new PassThrough();
      stdin.end('');
      const io: CliIo = { stdout: out, stderr: err, stdin, env: { SERVICE_BASE_URL: svc.url, SERVICE_API_KEY: svc.keys.demo.admin, DIR: dir, HOOK_URL: url, HOOK_SECRET: SECRET }, cwd: dir };
      const code = await runCli(args, { io, signal: new AbortController().signal });
      const text = out.text() + err.text();
      expect({ args, code }).toEqual({ args, code: 0 });
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain(TOKEN);
      if (args.includes('--log-format')) expect(text).toContain('notification not delivered');
    }
  });
});

describe('notify: each output drift once per run', () => {
  it('a retried attempt finding the same drift again reports it once', () => {
    const seen: OutputDrift[] = [];
    const events = notifyingEvents({ onDrift: (d) => seen.push(d) }, undefined, {});
    const drift = (output: number): OutputDrift => ({ output, url: `/out/${output}`, policy: 'evolve', action: 'evolved', types: 'service', changes: [{ column: 'x', change: 'added', to: 'bigint' }] });
    events.onDrift!(drift(0));
    events.onDrift!(drift(0));
    events.onDrift!(drift(1));
    expect(seen.map((d) => d.output)).toEqual([0, 1]);
  });
});
