// `npm run bench`: every area's benchmark in turn, or only the ones named (`npm run bench -- client sinks`).
// Each bench/<area>.ts exports run(); figures go to stdout. Not part of `npm test`.
import { existsSync } from 'node:fs';

const AREAS = ['engine', 'service', 'client', 'types', 'pipeline', 'sinks', 'jobs', 'limits'] as const;

const wanted = process.argv.slice(2);
const areas = wanted.length > 0 ? wanted : AREAS;
for (const area of areas) {
  const file = new URL(`./${area}.ts`, import.meta.url);
  if (!existsSync(file)) {
    console.log(`\n## ${area}: no benchmark yet`);
    continue;
  }
  console.log(`\n## ${area}`);
  const mod = (await import(file.href)) as { run: () => Promise<void> };
  await mod.run();
}
