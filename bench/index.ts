// `npm run bench`: every area's benchmark in turn, or only the ones named (`npm run bench -- client sinks`).
// Each area runs in a process of its own, so its peak RSS is its own and not what the areas before
// it left behind. Each bench/<area>.ts exports run(); figures go to stdout. Not part of `npm test`.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const AREAS = ['engine', 'service', 'firstread', 'client', 'types', 'pipeline', 'sinks', 'jobs', 'limits', 'cli', 'parallel', 'shards', 'link'] as const;

const wanted = process.argv.slice(2);
const unknown = wanted.filter((a) => !(AREAS as readonly string[]).includes(a));
if (unknown.length > 0) {
  console.error(`unknown bench area(s): ${unknown.join(', ')}; the areas are: ${AREAS.join(', ')}`);
  process.exit(2);
}
let failed = 0;
for (const area of wanted.length > 0 ? wanted : AREAS) {
  const file = fileURLToPath(new URL(`./${area}.ts`, import.meta.url));
  console.log(`\n## ${area}`);
  if (!existsSync(file)) {
    console.log('no benchmark yet');
    continue;
  }
  const script = `const m = await import(${JSON.stringify(new URL(`./${area}.ts`, import.meta.url).href)}); await m.run();`;
  const child = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { stdio: 'inherit' });
  if (child.status !== 0) {
    console.log(`${area}: benchmark failed (exit ${child.status ?? child.signal})`);
    failed++;
  }
}
process.exitCode = failed > 0 ? 1 : 0;
