// `connection.compression` of a job file reaches the client: what it asks the service for, seen on
// the wire by a loopback proxy in front of the real service (auto asks nothing of a service on this
// machine; on asks for zstd, br or gzip; off never asks).
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtins } from '../../connectors/index.ts';
import { parseJobFile } from '../../src/config/index.ts';
import { connect } from '../../src/jobs/run/connect.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

let svc: TestService;
let proxy: Server;
let proxyUrl: string;
/** The Accept-Encoding of every request the proxy passed on (undefined: none sent). */
const asked: (string | undefined)[] = [];
beforeAll(async () => {
  svc = await startTestService();
  const target = new URL(svc.url);
  proxy = createServer((req, res) => {
    asked.push(req.headers['accept-encoding']);
    const upstream = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode!, answer.headers);
      answer.pipe(res);
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => proxy?.close(resolve));
  await svc?.close();
});

/** What the client of a job file with `setting` in its connection block asks for, on one request. */
async function askedWith(setting: string): Promise<string | undefined> {
  const file = parseJobFile(`connection:\n  base_url: ${proxyUrl}\n${setting}jobs:\n  - name: j\n    source: { sql: "select 1" }\n    outputs:\n      - format: csv\n        path: ./out\n`, {
    file: 'jobs.yaml',
    registry: builtins,
    env: {},
  });
  const connected = await connect(file.connection, { env: { SERVICE_API_KEY: svc.keys.demo.admin }, cwd: process.cwd() });
  try {
    asked.length = 0;
    await connected.client.listViews();
    expect(asked).toHaveLength(1);
    return asked[0];
  } finally {
    await connected.close();
  }
}

describe('connection.compression', () => {
  it('auto (the default) asks a service on this machine for nothing; on asks for compressed answers; off for none', async () => {
    expect(await askedWith('')).toBeUndefined();
    expect(await askedWith('  compression: auto\n')).toBeUndefined();
    expect(await askedWith('  compression: on\n')).toMatch(/\bgzip\b/);
    expect(await askedWith('  compression: off\n')).toBeUndefined();
  });
});
