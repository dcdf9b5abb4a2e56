// The README's commands as a reader runs them: in a shell of the machine the README describes,
// whose own Node may be older than the project's (the README says so), not through npm scripts.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ROOT } from './cli/sluiceProcess.ts';
import { startTestService } from './helpers/service.ts';
import { parseJobFile } from '../src/config/index.ts';
import { builtins } from '../connectors/index.ts';

const run = promisify(execFile);
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { devEngines: { runtime: { version: string } } };
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { engines?: { node?: string } }> };

/** The PATH of a shell outside npm: without the project's node_modules/.bin (and its Node 24). */
function shellPath(): string {
  return (process.env.PATH ?? '').split(delimiter).filter((p) => !p.includes(`node_modules${'/'}.bin`)).join(delimiter);
}

describe('README commands', () => {
  it('no command hands a .ts file to a bare `node` (the system Node may not run TypeScript)', () => {
    const bare = [...README.matchAll(/(?<![\w-])(?<!npx )node (\S+\.ts)\b/g)].map((m) => m[0]);
    expect(bare).toEqual([]);
  });

  it('the stream-rows example runs as written, from a shell whose node is the system one', { timeout: 120_000 }, async () => {
    const command = /`((?:npx )?node config\/examples\/stream-rows\.ts "[^"`]*")`/.exec(README)?.[1];
    expect(command, 'the README names the command').toBeDefined();
    const svc = await startTestService({ sampleRows: 100 });
    try {
      const env = { ...process.env, PATH: shellPath(), SERVICE_BASE_URL: svc.url, SERVICE_API_KEY: svc.keys.demo.admin };
      const { stdout, stderr } = await run('sh', ['-c', command!], { cwd: ROOT, env });
      expect(stdout.trim().split('\n')).toHaveLength(5);
      expect(stderr).toContain('5 rows in 1 pages');
    } finally {
      await svc.close();
    }
  });

  it('shows job files that are valid, each with the fields it is there to show', () => {
    const blocks = [...README.matchAll(/```yaml\n([\s\S]*?)\n```/g)].map((m) => m[1]!);
    expect(blocks).toHaveLength(2);
    const [lake, sync] = blocks.map((text, i) => parseJobFile(text, { file: `README.md yaml block ${i + 1}`, registry: builtins, env: {} }).jobs[0]!);
    expect(lake!.outputs.map((o) => [o.sink.type, o.table, o.partitionBy])).toEqual([
      ['s3', 'manifest', ['day']],
      ['file', 'iceberg', ['day']],
    ]);
    expect(sync!.incremental).toMatchObject({ cursor: 'id', parameter: 'after' });
    expect(sync!.outputs[0]).toMatchObject({ mode: 'append' });
    expect(sync!.schedule).toBe('*/15 * * * *');
  });

  it('links its first screen to the job file reference, and every docs/ page it links exists', () => {
    const firstScreen = README.split('\n').slice(0, 25).join('\n');
    expect(firstScreen).toContain('](docs/jobs.md)');
    const linked = [...README.matchAll(/\]\((docs\/[^)#]+)(?:#[^)]*)?\)/g)].map((m) => m[1]!);
    expect(linked.filter((p) => !existsSync(join(ROOT, p)))).toEqual([]);
    expect(README.split('\n').length).toBeLessThanOrEqual(250);
  });

  it('explains each engine warning npm prints while installing on the oldest Node it allows', () => {
    const oldest = /(\d+)\.(\d+)\.(\d+)/.exec(pkg.devEngines.runtime.version)!.slice(1).map(Number) as [number, number, number];
    const warned = Object.entries(lock.packages)
      // Those npm installs here: an optional package of another platform is not installed, and not
      // checked; nor is the root package (sluice), which npm ci does not check but npx does.
      .filter(([path, p]) => path !== '' && p.engines?.node !== undefined && !satisfies(oldest, p.engines.node) && existsSync(join(ROOT, path)))
      .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length));
    expect(warned.length).toBeGreaterThan(0);
    const start = README.indexOf('EBADENGINE');
    const section = README.slice(start, README.indexOf('npx sluice ...', start));
    for (const name of warned) expect(section, name).toContain(`\`${name}\``);
    // What is not in npm ci's list is named apart: npx's warning for sluice itself.
    expect(section).not.toContain('`sluice`');
    expect(satisfies(oldest, lock.packages['']!.engines!.node!)).toBe(false);
    expect(README.slice(README.indexOf('npx sluice ...', start), README.indexOf('npx sluice ...', start) + 120)).toContain('`sluice` itself, twice');
  });

  it('declines or approves every dependency install script (npm ci warns about the others)', () => {
    const allow = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { allowScripts: Record<string, boolean> }).allowScripts;
    const withScripts = Object.entries(lock.packages as Record<string, { hasInstallScript?: boolean }>)
      .filter(([path, p]) => path !== '' && p.hasInstallScript === true && existsSync(join(ROOT, path)))
      .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length));
    expect(withScripts.length).toBeGreaterThan(0);
    for (const name of withScripts) expect(Object.keys(allow), name).toContain(name);
    const said = README.slice(README.indexOf('`allowScripts`'), README.indexOf('`allowScripts`') + 400);
    for (const [name, allowed] of Object.entries(allow)) expect(said, name).toMatch(new RegExp(`\`${name}\`[^,]*?${allowed ? 'is approved' : 'is declined'}`));
  });
});

/** Whether a version satisfies an npm engines range of `||` alternatives of `>=`, `<`, `^`, `~` or exact comparators. */
function satisfies(v: readonly [number, number, number], range: string): boolean {
  const cmp = (a: readonly number[], b: readonly number[]) => a[0]! - b[0]! || a[1]! - b[1]! || a[2]! - b[2]!;
  const parse = (s: string) => [0, 1, 2].map((i) => Number(s.split('.')[i] ?? 0));
  return range.split('||').some((alt) =>
    alt.replace(/(>=|<|\^|~)\s+/g, '$1').trim().split(/\s+/).every((c) => {
      if (c === '*' || c === 'x' || c === '') return true; // any version ("node": "*")
      if (c.startsWith('>=')) return cmp(v, parse(c.slice(2))) >= 0;
      if (c.startsWith('<')) return cmp(v, parse(c.slice(1))) < 0;
      if (c.startsWith('~')) {
        const b = parse(c.slice(1));
        return cmp(v, b) >= 0 && v[0] === b[0] && v[1] === b[1];
      }
      if (c.startsWith('^')) {
        const b = parse(c.slice(1));
        return cmp(v, b) >= 0 && v[0] === b[0];
      }
      return cmp(v, parse(c)) === 0;
    }),
  );
}
