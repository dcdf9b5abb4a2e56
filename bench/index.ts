// `npm run bench`: every area's benchmark in turn, or only the ones named (`npm run bench -- client sinks`).
// Each area runs in a process of its own, so its peak RSS is its own and not what the areas before
// it left behind. Each bench/<area>.ts exports run(); figures go to stdout, and the ones the docs rely
// on (bench/figures.ts) also into docs/performance.md, which this rewrites at the end. Not part of `npm test`.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FIGURES_FILE_ENV, performancePage, readRecorded } from './figures.ts';

export const AREAS = ['engine', 'service', 'firstread', 'client', 'types', 'pipeline', 'sinks', 'jobs', 'limits', 'cli', 'parallel', 'wire', 'shards', 'link', 'dialect'] as const;
/** Run only when named: they take minutes (`npm run bench -- soak`). */
export const NAMED_ONLY = ['soak'] as const;

const wanted = process.argv.slice(2);
const unknown = wanted.filter((a) => !(AREAS as readonly string[]).includes(a) && !(NAMED_ONLY as readonly string[]).includes(a));
if (unknown.length > 0) {
  console.error(`unknown bench area(s): ${unknown.join(', ')}; the areas are: ${[...AREAS, ...NAMED_ONLY].join(', ')}`);
  process.exit(2);
}
const figuresDir = mkdtempSync(join(tmpdir(), 'sluice-bench-figures-'));
const figuresFile = join(figuresDir, 'figures.jsonl');
writeFileSync(figuresFile, '');
let failed = 0;
for (const area of wanted.length > 0 ? wanted : AREAS) {
  const file = fileURLToPath(new URL(`./${area}.ts`, import.meta.url));
  console.log(`\n## ${area}`);
  if (!existsSync(file)) {
    console.log('no benchmark yet');
    continue;
  }
  const script = `const m = await import(${JSON.stringify(new URL(`./${area}.ts`, import.meta.url).href)}); await m.run();`;
  const child = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { stdio: 'inherit', env: { ...process.env, [FIGURES_FILE_ENV]: figuresFile } });
  if (child.status !== 0) {
    console.log(`${area}: benchmark failed (exit ${child.status ?? child.signal})`);
    failed++;
  }
}
const recorded = readRecorded(readFileSync(figuresFile, 'utf8'));
rmSync(figuresDir, { recursive: true, force: true });
if (recorded.size > 0) {
  const page = fileURLToPath(new URL('../docs/performance.md', import.meta.url));
  writeFileSync(page, performancePage(existsSync(page) ? readFileSync(page, 'utf8') : '', recorded));
  console.log(`\ndocs/performance.md: ${recorded.size} figure(s) of this run written`);
}
process.exitCode = failed > 0 ? 1 : 0;
