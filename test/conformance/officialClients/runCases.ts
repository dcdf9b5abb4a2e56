// Runs one official client's driver over the shared case file against a service of its own, and
// reads its report: one JSON line per case ({case, status: pass | fail | n/a, detail}).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export const HERE = import.meta.dirname;
export const CASES_FILE = join(HERE, 'cases.json');

/** Cases each client has no call for (n/a), and the only ones the async Python client has calls for. */
export const TS_NA = ['search_datasets'];
export const PYTHON_SYNC_NA = ['search_datasets'];
export const PYTHON_ASYNC_RUNS = ['execute_query', 'execution_status', 'execution_results', 'execution_results_csv', 'latest_results', 'cancel_execution', 'run_query', 'compressed_results'];
export const GO_NA: string[] = [];

export interface CaseSpec {
  id: string;
  endpoint: string;
  what: string;
}

export interface CaseResult {
  case: string;
  status: 'pass' | 'fail' | 'n/a';
  detail: string;
}

export function loadCases(): CaseSpec[] {
  return (JSON.parse(readFileSync(CASES_FILE, 'utf8')) as { cases: CaseSpec[] }).cases;
}

/** Runs `cmd args`, its stdout the report; rejects with stderr when it exits otherwise than 0. */
export function runDriver(cmd: string, args: string[], env: NodeJS.ProcessEnv, cwd: string, timeoutMs: number): Promise<Map<string, CaseResult>> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      const results = new Map<string, CaseResult>();
      for (const line of out.split('\n')) {
        if (!line.startsWith('{')) continue;
        const r = JSON.parse(line) as CaseResult;
        results.set(r.case, r);
      }
      if (code !== 0) reject(new Error(`${cmd} ${args.join(' ')} exited ${code}: ${err.slice(-2000)}\n${out.slice(-2000)}`));
      else resolve(results);
    });
  });
}

/** The matrix column of a client, as docs/local-service.md shows it: pass, or n/a with the reason. */
export function summary(results: Map<string, CaseResult>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [id, r] of results) out[id] = r.status === 'n/a' ? `n/a: ${r.detail}` : r.status;
  return out;
}
