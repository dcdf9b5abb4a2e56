// One export as 2 and N local processes (`sluice run --processes N`, shard i/N each, one commit) against
// the same export as one process (`sluice run`), both to zstd Parquet on local disk, in the same
// run. Counts the executions the service recorded for each (a sharded run must start exactly one)
// and the manifests published. The service runs in a child process of its own.
// `npm run bench -- shards`; BENCH_SHARD_ROWS overrides 1M rows, BENCH_SHARD_PROCESSES 4 processes.
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startChildService } from './pipeline.ts';

const ROWS = Number(process.env.BENCH_SHARD_ROWS ?? 1_000_000);
const PROCESSES = Number(process.env.BENCH_SHARD_PROCESSES ?? 4);
const KEY = 'sk_bench_admin_key';
const SLUICE = fileURLToPath(new URL('../bin/sluice.js', import.meta.url));
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

export async function run(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-bench-shards-'));
  const svc = await startChildService(join(dataDir, 'service'), ROWS);
  try {
    console.log(`${fmt(ROWS)} rows x 8 columns (sample.events) to zstd Parquet, 250,000 rows per part; ${availableParallelism()} cores`);
    const executions = async (): Promise<number> => (await readdir(join(dataDir, 'service', 'catalog', 'executions'))).filter((n) => n.endsWith('.json')).length;
    const job = async (name: string): Promise<string> => {
      const file = join(dataDir, `${name}.yaml`);
      await writeFile(
        file,
        `connection:\n  base_url: ${svc.url}\nstate_dir: ${join(dataDir, `state-${name}`)}\njobs:\n  - name: events\n    source: { sql: "select * from sample.events order by id" }\n` +
          `    outputs:\n      - format: parquet\n        format_options: { compression: zstd }\n        path: ${join(dataDir, name)}\n        max_rows_per_file: 250000\n`,
      );
      return file;
    };
    const measure = async (name: string, extra: string[]) => {
      const file = await job(name);
      const before = await executions();
      const t = performance.now();
      await sluice(['run', file, '--no-progress', ...extra]);
      const ms = performance.now() - t;
      const manifest = JSON.parse(await readFile(join(dataDir, name, '_manifest.json'), 'utf8')) as { total_rows: number; files: unknown[] };
      if (manifest.total_rows !== ROWS) throw new Error(`${name}: ${manifest.total_rows} rows committed, expected ${ROWS}`);
      const manifests = (await readdir(join(dataDir, name))).filter((n) => n === '_manifest.json').length;
      return { ms, executions: (await executions()) - before, parts: manifest.files.length, manifests };
    };
    const one = await measure('one-process', []);
    console.log(`sluice run (1 process): ${(one.ms / 1000).toFixed(2)} s, ${one.executions} execution, ${one.parts} parts, ${one.manifests} manifest`);
    for (const n of [...new Set([2, PROCESSES])]) {
      const many = await measure(`sharded-${n}`, ['--processes', String(n)]);
      console.log(
        `sluice run --processes ${n}: ${(many.ms / 1000).toFixed(2)} s = ${(one.ms / many.ms).toFixed(2)}x the speed of 1 process, ` +
          `${many.executions} execution (target 1), ${many.parts} parts, ${many.manifests} commit (target 1)`,
      );
    }
  } finally {
    await svc.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

function sluice(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SLUICE, ...args], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, SERVICE_API_KEY: KEY } });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`sluice ${args.join(' ')} exited ${code}: ${err.slice(-2000)}`))));
  });
}
