// Under npx (npm exec), sluice runs below `sh -c` below npm. npm forwards a SIGTERM to that shell
// only, which dies without passing it on: sluice is re-parented and would go on for as long as
// its job lasts. These tests make the same tree (a shell that dies of SIGTERM while sluice runs)
// and check that sluice notices and stops as on SIGTERM, under npm only.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.ts';
import { logLines, sluiceEntry, testEnv } from './sluiceProcess.ts';

let svc: TestService;
let dir: string;
let file: string;
/** Every sluice started, stopped at the end whatever the outcome (an orphan outlives a failed test). */
const started: number[] = [];

beforeAll(async () => {
  svc = await startTestService({ sampleRows: 1000 });
  dir = await mkdtemp(join(tmpdir(), 'sluice-parent-'));
  file = join(dir, 'jobs.yaml');
  await writeFile(
    file,
    `connection:\n  base_url: \${SERVICE_BASE_URL}\nstate_dir: ${join(dir, 'state')}\njobs:\n  - name: yearly\n    source: { sql: "select 1 as x" }\n    outputs: [{ format: csv, path: "${join(dir, 'out')}" }]\n    schedule: "0 0 1 1 *"\n`,
  );
}, 60_000);
afterAll(async () => {
  for (const pid of started) if (alive(pid)) process.kill(pid, 'SIGKILL');
  await svc.close();
  await rm(dir, { recursive: true, force: true });
});

interface Wrapped {
  /** The sluice process (the shell's child). */
  pid: number;
  stderr(): string;
  waitFor(pattern: RegExp, timeoutMs: number): Promise<boolean>;
  /** Resolves when sluice has exited (its end of the pipes closed). */
  closed: Promise<void>;
  kill(signal: NodeJS.Signals): void;
}

/** `sh -c 'node bin/sluice.js ARGS & wait'`: a shell between the test and sluice, as npm has. */
async function underShell(args: string[], env: Record<string, string | undefined>): Promise<Wrapped> {
  const quoted = [sluiceEntry(), ...args].map((a) => `'${a}'`).join(' ');
  const shell = spawn('sh', ['-c', `node ${quoted} & echo "pid $!"; wait`], { env: testEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  shell.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  shell.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const closed = new Promise<void>((resolve) => shell.stderr.on('close', () => resolve()));
  const until = async (test: () => boolean, timeoutMs: number): Promise<boolean> => {
    const end = Date.now() + timeoutMs;
    while (!test() && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
    return test();
  };
  await until(() => /pid \d+/.test(out), 10_000);
  const pid = Number(/pid (\d+)/.exec(out)?.[1]);
  started.push(pid);
  return {
    pid,
    stderr: () => err,
    waitFor: (pattern, timeoutMs) => until(() => pattern.test(err) || pattern.test(out), timeoutMs),
    closed,
    kill: (signal) => shell.kill(signal),
  };
}

/** Waits a moment for a process whose pipes have closed to have exited. */
async function gone(pid: number): Promise<boolean> {
  for (let i = 0; i < 50 && alive(pid); i++) await new Promise((r) => setTimeout(r, 100));
  return !alive(pid);
}

/** Running (an exited orphan may stay a zombie until init reaps it: that is not alive). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return process.platform !== 'linux';
  }
}

describe('the parent process gone', () => {
  const base = () => ({ SERVICE_BASE_URL: svc.url, SERVICE_API_KEY: svc.keys.demo.admin });

  it('under npm (npm_command set): schedule stops as on SIGTERM when the shell above it dies', async () => {
    const proc = await underShell(['schedule', file], { ...base(), npm_command: 'exec' });
    expect(await proc.waitFor(/"msg":"scheduled"/, 30_000), proc.stderr()).toBe(true);
    proc.kill('SIGTERM');
    await proc.closed;
    const lines = logLines(proc.stderr());
    expect(lines.find((l) => /parent process is gone/.test(String(l.msg))), proc.stderr()).toBeDefined();
    expect(lines.some((l) => l.msg === 'stopped')).toBe(true);
    expect(await gone(proc.pid)).toBe(true);
  }, 60_000);

  it('under npm: serve stops too', async () => {
    const proc = await underShell(['serve', '--port', '0', '--data-dir', join(dir, 'serve')], { npm_command: 'exec', SERVICE_API_KEY: 'sk_parent_test_key' });
    expect(await proc.waitFor(/listening on/, 60_000), proc.stderr()).toBe(true);
    proc.kill('SIGTERM');
    await Promise.race([proc.closed, new Promise((r) => setTimeout(r, 30_000))]);
    expect(await gone(proc.pid)).toBe(true);
  }, 60_000);

  it('outside npm (nohup, disown): the parent is not watched; SLUICE_STOP_WITH_PARENT=1 turns it on', async () => {
    const free = await underShell(['schedule', file], { ...base(), npm_command: undefined });
    expect(await free.waitFor(/"msg":"scheduled"/, 30_000), free.stderr()).toBe(true);
    free.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 1500));
    expect(alive(free.pid)).toBe(true);
    process.kill(free.pid, 'SIGTERM');
    await free.closed;

    const asked = await underShell(['schedule', file], { ...base(), npm_command: undefined, SLUICE_STOP_WITH_PARENT: '1' });
    expect(await asked.waitFor(/"msg":"scheduled"/, 30_000), asked.stderr()).toBe(true);
    asked.kill('SIGTERM');
    await asked.closed;
    expect(logLines(asked.stderr()).some((l) => /parent process is gone/.test(String(l.msg)))).toBe(true);
  }, 60_000);
});
