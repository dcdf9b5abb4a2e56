// A client that goes away while the service reads its request body (a killed or stopped process)
// is not an error of the service: nothing is logged as an internal error, and the service serves on.
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.ts';
import { runSql } from './api.ts';

let s: TestService;
beforeAll(async () => {
  s = await startTestService({ walledTeams: false, sampleRows: 10 });
});
afterAll(async () => {
  await s.close();
});

describe('a client gone while its request body is read', () => {
  it('is not logged as an internal error, and the next request is served', async () => {
    const errors: string[] = [];
    const spy = vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => void errors.push(args.map(String).join(' ')));
    try {
      const { hostname, port, pathname } = new URL(s.url);
      const socket = connect(Number(port), hostname);
      await new Promise<void>((ok, fail) => socket.once('connect', ok).once('error', fail));
      // A body announced as 100 kB, of which 100 bytes come before the connection is closed.
      socket.write(`POST ${pathname}/v1/sql/execute HTTP/1.1\r\nHost: ${hostname}\r\nx-service-api-key: ${s.keys.demo.write}\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n{"sql": "${'x'.repeat(80)}`);
      await sleep(200);
      socket.destroy();
      await sleep(300);
      expect(errors.filter((e) => e.includes('internal error'))).toEqual([]);
    } finally {
      spy.mockRestore();
    }
    // The service serves on (runSql throws unless the execution completes).
    await runSql(s, 'SELECT 1');
  });
});
