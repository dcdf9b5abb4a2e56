import { createServer, type Server } from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifySignature } from '../../src/jobs/run/notify.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { sluice, startSluice, terminate } from './sluiceProcess.ts';

const SECRET = 'whsec-schedule-test-0123456789';

let svc: TestService;
let dir: string;
let receiver: Server;
let hookUrl: string;
let downUrl: string;
const received: { event: string; verified: boolean }[] = [];

beforeAll(async () => {
  svc = await startTestService({ sampleRows: 400 });
  dir = await mkdtemp(join(tmpdir(), 'sluice-schedule-notify-'));
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      received.push({ event: String(req.headers['sluice-event']), verified: verifySignature(SECRET, req.headers['sluice-signature'] as string, body) });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  // A port that was just free: a receiver that is down.
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  downUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/hook`;
  await new Promise((resolve) => closed.close(resolve));
});
afterAll(async () => {
  await new Promise((resolve) => receiver?.close(resolve));
  await svc?.close();
  await rm(dir, { recursive: true, force: true });
});

/** Two scheduled jobs: `drifted` (its columns given) notifies a live receiver, `unheard` fails and notifies a receiver that is down. */
async function jobFile(columns: string): Promise<string> {
  const path = join(dir, 'jobs.yaml');
  const hook = (url: string, extra = '') => `    notify: { webhook: { url: "${url}", secret: "\${HOOK_SECRET}", events: [failure, drift]${extra} } }\n`;
  await writeFile(
    path,
    `connection:\n  base_url: \${SERVICE_BASE_URL}\nstate_dir: \${OUT}/state\njobs:\n` +
      `  - name: drifted\n    source: { sql: "select ${columns} from sample.events" }\n    outputs: [{ format: parquet, path: "\${OUT}/drifted" }]\n    schedule: "0 0 1 1 *"\n${hook(hookUrl)}` +
      `  - name: unheard\n    source: { sql: "select * from no_such_table" }\n    outputs: [{ format: csv, path: "\${OUT}/unheard" }]\n    schedule: "0 0 1 1 *"\n${hook(downUrl, ', retries: 0')}`,
  );
  return path;
}

describe('sluice schedule: notifications and drift in /metrics', () => {
  it('counts notifications sent and failed and schema drift per job', async () => {
    const env = { SERVICE_BASE_URL: svc.url, SERVICE_API_KEY: svc.keys.demo.admin, OUT: dir, HOOK_SECRET: SECRET };
    // A first run commits one column; the scheduled run then reads two.
    expect((await sluice(['run', await jobFile('id'), '--job', 'drifted'], { env })).code).toBe(0);
    const proc = startSluice(['schedule', await jobFile('id, name'), '--health-port', '0', '--run-now'], { env });
    const [, url] = (await proc.waitFor(/"health server listening","url":"(http:[^"]+)"/)) as unknown as [string, string];
    let metrics = '';
    const want = ['sluice_job_notifications_sent_total{job="drifted"} 1', 'sluice_job_schema_drift_total{job="drifted"} 1', 'sluice_job_notifications_failed_total{job="unheard"} 1'];
    for (let i = 0; i < 100 && !want.every((w) => metrics.includes(w)); i++) {
      await new Promise((r) => setTimeout(r, 100));
      metrics = await (await fetch(`${url}/metrics`)).text();
    }
    for (const w of want) expect(metrics).toContain(w);
    expect(metrics).toContain('sluice_job_notifications_failed_total{job="drifted"} 0');
    expect(metrics).toContain('sluice_job_schema_drift_total{job="unheard"} 0');
    expect(metrics).toContain('# TYPE sluice_job_notifications_sent_total counter');
    expect(received).toEqual([{ event: 'drift', verified: true }]);
    const { result } = await terminate(proc);
    expect(result.code).toBe(0);
    expect(result.stderr).not.toContain(SECRET);
  });
});
