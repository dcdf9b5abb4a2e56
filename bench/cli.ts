// CLI start-up: wall time and peak RSS of `sluice validate` (loads a job file, nothing else) and of
// `sluice --help`, against two baselines measured in the same run: bare Node, and `sluice serve --help`,
// which loads the query service and DuckDB as every command did while `serve` was imported eagerly.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const RUNS = Number(process.env.BENCH_CLI_RUNS ?? 5);
const work = mkdtempSync(join(tmpdir(), 'sluice-bench-cli-'));
// Loaded first in each child: writes the child's own peak RSS (KiB) when it exits, from VmHWM where
// there is one (a child's maxRSS on Linux starts at its parent's; see peakRss.ts). Written out here
// rather than importing peakRss.ts: loading TypeScript would add Node's type stripping to the
// memory of the very child it measures.
const probe = `data:text/javascript,${encodeURIComponent(
  "import { readFileSync, writeFileSync } from 'node:fs'; process.on('exit', () => { let kib = process.resourceUsage().maxRSS; try { const m = /^VmHWM:\\s+(\\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8')); if (m) kib = Number(m[1]); } catch {} writeFileSync(process.env.BENCH_RSS_FILE, String(kib)); });",
)}`;

const CASES: Record<string, string[]> = {
  'bare node': ['-e', ''],
  'sluice serve --help (loads the service)': ['bin/sluice.js', 'serve', '--help'],
  'sluice validate': ['bin/sluice.js', 'validate', 'config/examples/quickstart.yaml'],
  'sluice --help': ['bin/sluice.js', '--help'],
};

function once(args: string[]): { ms: number; rssMiB: number } {
  const rssFile = join(work, 'rss');
  const started = performance.now();
  const child = spawnSync(process.execPath, ['--import', probe, ...args], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, BENCH_RSS_FILE: rssFile } });
  const ms = performance.now() - started;
  if (child.status !== 0) throw new Error(`${args.join(' ')} exited ${child.status}: ${child.stderr}`);
  return { ms, rssMiB: Number(readFileSync(rssFile, 'utf8')) / 1024 };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function run(): Promise<void> {
  try {
    const samples = new Map<string, { ms: number[]; rss: number[] }>(Object.keys(CASES).map((k) => [k, { ms: [], rss: [] }]));
    // Interleaved, so a change in the machine's load touches every case alike.
    for (let i = 0; i < RUNS; i++) {
      for (const [name, args] of Object.entries(CASES)) {
        const { ms, rssMiB } = once(args);
        samples.get(name)!.ms.push(ms);
        samples.get(name)!.rss.push(rssMiB);
      }
    }
    const serve = samples.get('sluice serve --help (loads the service)')!;
    const bare = samples.get('bare node')!;
    console.log(`median of ${RUNS} runs each, interleaved`);
    for (const [name, s] of samples) {
      const ms = median(s.ms);
      const rss = Math.max(...s.rss);
      console.log(
        `${name.padEnd(42)} ${ms.toFixed(0).padStart(6)} ms  peak rss ${rss.toFixed(0).padStart(4)} MiB` +
          `  | x${(ms / median(serve.ms)).toFixed(2)} time, x${(rss / Math.max(...serve.rss)).toFixed(2)} rss of serve --help` +
          `  | x${(ms / median(bare.ms)).toFixed(2)} time of bare node`,
      );
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
