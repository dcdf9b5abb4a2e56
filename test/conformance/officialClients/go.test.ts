// The official Go client, unmodified (vendor/go, pinned commit in vendor/SOURCES.md), over the
// shared case file against a service of its own. Built offline with Go >= 1.22 (toolchains.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestService, type TestService } from '../../helpers/service.ts';
import { CASES_FILE, GO_NA, HERE, loadCases, runDriver, type CaseResult } from './runCases.ts';
import { goToolchain } from './toolchains.ts';

const go = goToolchain();
const cases = loadCases();

describe.skipIf(!go.ok)('the official Go client, unmodified, over the shared cases', () => {
  let svc: TestService;
  let results: Map<string, CaseResult>;
  beforeAll(async () => {
    const toolchain = go as { bin: string; env?: Record<string, string> };
    const cache = join(tmpdir(), 'sluice-official-clients', 'go-build');
    mkdirSync(cache, { recursive: true });
    // Offline: no module proxy, no toolchain download; the client needs nothing beyond the standard library.
    const env = { ...process.env, ...toolchain.env, GOTOOLCHAIN: 'local', GOPROXY: 'off', GOFLAGS: '-mod=mod', GOCACHE: cache, GOPATH: join(cache, 'gopath'), GOTELEMETRY: 'off', CGO_ENABLED: '0' };
    const exe = join(cache, 'driver');
    const built = spawnSync(toolchain.bin, ['build', '-o', exe, '.'], { cwd: join(HERE, 'go'), env, encoding: 'utf8', timeout: 600_000 });
    if (built.status !== 0) throw new Error(`go build failed: ${built.stderr}`);
    svc = await startTestService({ encodeMinBytes: 0 });
    results = await runDriver(exe, [svc.url.replace(/\/api$/, ''), svc.keys.demo.admin, CASES_FILE], env, HERE, 240_000);
  }, 900_000);
  afterAll(() => svc?.close());

  for (const c of cases) {
    const runs = !GO_NA.includes(c.id);
    it(`${c.id} (${c.endpoint}) ${runs ? 'passes' : 'is n/a: the client has no call for it'}`, () => {
      const r = results.get(c.id);
      expect(r, `no report for ${c.id}`).toBeDefined();
      expect({ status: r!.status, detail: r!.status === 'pass' ? '' : r!.detail }).toEqual({ status: runs ? 'pass' : 'n/a', detail: runs ? '' : r!.detail });
    });
  }
});

describe.runIf(!go.ok)('the official Go client', () => {
  it.skip(`is not run: ${go.ok ? '' : go.reason}`, () => undefined);
});
