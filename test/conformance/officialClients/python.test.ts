// The official Python client, unmodified (vendor/python, pinned commit in vendor/SOURCES.md), sync
// and async, over the shared case file, each against a service of its own.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { startTestService, type TestService } from '../../helpers/service.ts';
import { CASES_FILE, HERE, loadCases, PYTHON_ASYNC_RUNS, PYTHON_SYNC_NA, runDriver, type CaseResult } from './runCases.ts';
import { pythonToolchain } from './toolchains.ts';

const python = pythonToolchain();
const cases = loadCases();


for (const mode of ['sync', 'async'] as const) {
  describe.skipIf(!python.ok)(`the official Python client (${mode}), unmodified, over the shared cases`, () => {
    let svc: TestService;
    let results: Map<string, CaseResult>;
    beforeAll(async () => {
      svc = await startTestService({ encodeMinBytes: 0 });
      const origin = svc.url.replace(/\/api$/, '');
      results = await runDriver((python as { bin: string }).bin, [join(HERE, 'python', 'driver.py'), mode, origin, svc.keys.demo.admin, CASES_FILE], { ...process.env, PYTHONDONTWRITEBYTECODE: '1' }, HERE, 240_000);
    }, 300_000);
    afterAll(() => svc?.close());

    for (const c of cases) {
      const runs = mode === 'sync' ? !PYTHON_SYNC_NA.includes(c.id) : PYTHON_ASYNC_RUNS.includes(c.id);
      it(`${c.id} (${c.endpoint}) ${runs ? 'passes' : 'is n/a: the client has no call for it'}`, () => {
        const r = results.get(c.id);
        expect(r, `no report for ${c.id}`).toBeDefined();
        expect({ status: r!.status, detail: r!.status === 'pass' ? '' : r!.detail }).toEqual({ status: runs ? 'pass' : 'n/a', detail: runs ? '' : r!.detail });
      });
    }
  });
}

describe.runIf(!python.ok)('the official Python client', () => {
  it.skip(`is not run: ${python.ok ? '' : python.reason}`, () => undefined);
});
