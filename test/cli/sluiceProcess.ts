import { spawn, type ChildProcess } from 'node:child_process';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ServiceClient } from '../../src/client/index.ts';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The program the tests run: the installed bin, exactly as a user runs it. */
export function sluiceEntry(): string {
  return join(ROOT, 'bin/sluice.js');
}

/** node_modules/.bin first, so `node` is the project's Node 24 whatever the system has. */
export function testEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${join(ROOT, 'node_modules/.bin')}${delimiter}${process.env.PATH ?? ''}` };
  delete env.SERVICE_BASE_URL;
  delete env.SERVICE_API_KEY;
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

export interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface Running {
  readonly child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves when stderr (or stdout) has a line matching `pattern`; rejects after `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  done: Promise<Finished>;
}

export function startSluice(args: readonly string[], options: { cwd?: string; env?: Record<string, string | undefined>; input?: string; entry?: string } = {}): Running {
  const child = spawn('node', [options.entry ?? sluiceEntry(), ...args], { cwd: options.cwd ?? ROOT, env: testEnv(options.env), stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  const listeners = new Set<() => void>();
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    out += d;
    for (const l of listeners) l();
  });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    err += d;
    for (const l of listeners) l();
  });
  if (options.input !== undefined) child.stdin!.end(options.input);
  else child.stdin!.end();
  const done = new Promise<Finished>((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout: out, stderr: err })));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    done,
    waitFor(pattern, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          const match = err.match(pattern) ?? out.match(pattern);
          if (match) {
            listeners.delete(check);
            clearTimeout(timer);
            resolve(match);
          }
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`timed out waiting for ${pattern}\nstdout: ${out}\nstderr: ${err}`));
        }, timeoutMs);
        listeners.add(check);
        void done.then(() => {
          check();
          if (listeners.has(check)) {
            listeners.delete(check);
            clearTimeout(timer);
            reject(new Error(`process exited before ${pattern}\nstdout: ${out}\nstderr: ${err}`));
          }
        });
        check();
      });
    },
  };
}

export function sluice(args: readonly string[], options: { cwd?: string; env?: Record<string, string | undefined>; input?: string } = {}): Promise<Finished> {
  return startSluice(args, options).done;
}

/** Sends SIGTERM and waits for the exit: how the process ended, and how long after the signal. */
export async function terminate(proc: Running): Promise<{ result: Finished; ms: number }> {
  const sent = performance.now();
  proc.child.kill('SIGTERM');
  const result = await proc.done;
  return { result, ms: performance.now() - sent };
}

/** Waits for the run's "execution started" log line and returns its execution id. */
export async function startedExecutionId(proc: Running): Promise<string> {
  const [, id] = (await proc.waitFor(/"execution started".*"execution_id":"(01[0-9A-Z]{24})"/)) as unknown as [string, string];
  return id;
}

/** The state the service reports for an execution now. */
export async function executionState(baseUrl: string, apiKey: string, executionId: string): Promise<string> {
  const client = new ServiceClient({ baseUrl, apiKey, env: {} });
  try {
    return (await client.getStatus(executionId)).state;
  } finally {
    await client.close();
  }
}

/** The JSON log lines of stderr (non-JSON lines are skipped). */
export function logLines(stderr: string): Record<string, unknown>[] {
  return stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}
