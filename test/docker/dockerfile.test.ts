import { existsSync, readFileSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadJobFile } from '../../src/config/index.ts';
import { logLines, ROOT, startSluice } from '../cli/sluiceProcess.ts';
import { builtins } from '../../connectors/index.ts';

// Docker cannot build here; what the image relies on is checked instead: its instructions, the
// files it copies, the job file it runs, and how that `sluice schedule` process ends on SIGTERM.

interface Instruction {
  stage: number;
  op: string;
  args: string;
}

function instructions(): Instruction[] {
  const text = readFileSync(join(ROOT, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
  let stage = -1;
  const out: Instruction[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const [op, ...rest] = line.split(/\s+/);
    if (op!.toUpperCase() === 'FROM') stage += 1;
    out.push({ stage, op: op!.toUpperCase(), args: rest.join(' ') });
  }
  return out;
}

describe('Dockerfile', () => {
  const all = instructions();
  const final = all.filter((i) => i.stage === Math.max(...all.map((x) => x.stage)));
  /** A variable the final stage's ENV sets ('' when it sets none). */
  const imageEnv = (name: string): string => new RegExp(`\\b${name}=(\\S+)`).exec(final.filter((i) => i.op === 'ENV').map((i) => i.args).join(' '))?.[1] ?? '';

  it('is multi-stage on node:24-slim, installs with npm ci and prunes dev dependencies', () => {
    const froms = all.filter((i) => i.op === 'FROM').map((i) => i.args);
    expect(froms.length).toBeGreaterThanOrEqual(2);
    for (const from of froms) expect(from).toMatch(/^node:24-slim\b/);
    const runs = all.filter((i) => i.op === 'RUN' && i.stage === 0).map((i) => i.args).join(' && ');
    expect(runs).toMatch(/\bnpm ci\b/);
    expect(runs).toMatch(/\bnpm prune --omit=dev\b/);
    // `npm ci` needs the lock file, which is in the repository.
    expect(all.some((i) => i.op === 'COPY' && i.args.includes('package-lock.json'))).toBe(true);
    expect(existsSync(join(ROOT, 'package-lock.json'))).toBe(true);
  });

  it('runs the compiled output: built before the dev dependencies go, dist/ copied and no sources', () => {
    const build = all.filter((i) => i.op === 'RUN' && i.stage === 0).map((i) => i.args).join(' && ');
    const compile = build.indexOf('npm run build');
    expect(compile).toBeGreaterThan(build.indexOf('npm ci'));
    expect(build.indexOf('npm prune --omit=dev')).toBeGreaterThan(compile);
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    // What the build compiles is in the build stage: its tsconfig, every one it extends, and the
    // folders of the nearest `include` in that chain (an `include` replaces the one it extends).
    const needed: string[] = [];
    let included: string[] | undefined;
    for (let config: string | undefined = /-p (\S+)/.exec(pkg.scripts.build!)![1]!; config !== undefined; ) {
      const { extends: base, include } = JSON.parse(readFileSync(join(ROOT, config), 'utf8')) as { extends?: string; include?: string[] };
      needed.push(config);
      included ??= include;
      config = base?.startsWith('.') ? join(dirname(config), base) : undefined;
    }
    needed.push(...included!.map((i) => i.replace(/^\.\//, '').split('/')[0]!));
    expect(needed.length).toBeGreaterThan(2);
    const copied = all.filter((i) => i.op === 'COPY' && i.stage === 0).flatMap((i) => i.args.split(/\s+/).slice(0, -1));
    expect(copied).toEqual(expect.arrayContaining([...needed, 'bin']));
    const fromBuild = final.filter((i) => i.op === 'COPY' && i.args.startsWith('--from=build')).map((i) => i.args.split(/\s+/)[1]);
    expect(fromBuild).toContain('/app/dist');
    expect(fromBuild).not.toContain('/app/src');
    expect(fromBuild).not.toContain('/app/connectors');
    // With no src/ beside it, bin/sluice.js runs dist/.
    const bin = readFileSync(join(ROOT, 'bin', 'sluice.js'), 'utf8');
    expect(bin).toContain("existsSync(new URL('../src/cli/main.ts', import.meta.url))");
    expect(bin).toContain("'../dist/src/cli/main.js'");
  });

  it('runs as a non-root user, with sluice on PATH as the entrypoint and schedule as the command', () => {
    const users = final.filter((i) => i.op === 'USER').map((i) => i.args);
    expect(users.length).toBeGreaterThan(0);
    expect(users.at(-1)).not.toMatch(/^(root|0)(:|$)/);
    const entry = final.find((i) => i.op === 'ENTRYPOINT');
    expect(JSON.parse(entry!.args)).toEqual(['sluice']);
    expect(JSON.parse(final.find((i) => i.op === 'CMD')!.args)).toEqual(['schedule', '/etc/sluice/jobs.yaml']);
    // `sluice` is linked to package.json's bin, which is an executable script with a node shebang.
    const bin = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { bin: { sluice: string } }).bin.sluice;
    const link = final.filter((i) => i.op === 'RUN').map((i) => i.args).join(' ');
    expect(link).toContain(`ln -s /app/${bin} /usr/local/bin/sluice`);
    expect(readFileSync(join(ROOT, bin), 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
    expect(statSync(join(ROOT, bin)).isFile()).toBe(true);
  });

  it('copies only files that exist, and the default job file validates', async () => {
    for (const copy of all.filter((i) => i.op === 'COPY' && !i.args.startsWith('--from'))) {
      const sources = copy.args.split(/\s+/).slice(0, -1);
      for (const source of sources) expect(existsSync(join(ROOT, source)), source).toBe(true);
    }
    const jobCopy = final.find((i) => i.op === 'COPY' && i.args.endsWith('/etc/sluice/jobs.yaml'));
    const source = jobCopy!.args.split(/\s+/)[0]!;
    const jobFile = await loadJobFile(join(ROOT, source), { registry: builtins, env: {} });
    expect(jobFile.jobs.length).toBeGreaterThan(0);
    expect(jobFile.jobs.every((j) => j.schedule !== undefined)).toBe(true);
    const dockerignore = readFileSync(join(ROOT, '.dockerignore'), 'utf8').split('\n');
    for (const entry of ['node_modules', '.git', '.sluice', 'out']) expect(dockerignore).toContain(entry);
  });

  it('matches what docs/operations.md says about the image and the quickstart', () => {
    const doc = readFileSync(join(ROOT, 'docs', 'operations.md'), 'utf8');
    // Prose wraps anywhere: compare with runs of whitespace made one space.
    const docker = doc.slice(doc.indexOf('## Scheduling and Docker'), doc.indexOf('## Sharding')).replace(/\s+/g, ' ');
    const env = final.filter((i) => i.op === 'ENV').map((i) => i.args).join(' ');
    const workdir = final.filter((i) => i.op === 'WORKDIR').at(-1)!.args;
    // "runs as the unprivileged `node` user with `/data` as its working directory"
    expect(docker).toContain('unprivileged `node` user with `/data` as its working directory');
    expect(final.filter((i) => i.op === 'USER').at(-1)!.args).toBe('node');
    expect(workdir).toBe('/data');
    expect(final.some((i) => i.op === 'RUN' && /chown node:node \/data\b/.test(i.args))).toBe(true);
    // "`ENTRYPOINT [\"sluice\"]`, `CMD [\"schedule\", \"/etc/sluice/jobs.yaml\"]`"
    expect(docker).toContain(`\`ENTRYPOINT ${final.find((i) => i.op === 'ENTRYPOINT')!.args}\``);
    expect(docker).toContain(`\`CMD ${final.find((i) => i.op === 'CMD')!.args}\``);
    // "health check on `SLUICE_HEALTH_PORT` (9464)"; `-p 9464:9464`
    const port = /SLUICE_HEALTH_PORT=(\d+)/.exec(env)![1]!;
    expect(docker).toContain(`health check on \`SLUICE_HEALTH_PORT\` (${port})`);
    expect(docker).toContain(`-p ${port}:${port}`);
    // The health server binds loopback unless told otherwise: the image tells it every interface,
    // which a published port and an orchestrator's probes need.
    expect(/SLUICE_HEALTH_HOST=(\S+)/.exec(env)?.[1]).toBe('0.0.0.0');
    expect(docker).toContain('`SLUICE_HEALTH_HOST=0.0.0.0`');
    expect(final.some((i) => i.op === 'EXPOSE' && i.args === port)).toBe(true);
    expect(final.find((i) => i.op === 'HEALTHCHECK')!.args).toContain('SLUICE_HEALTH_PORT');
    // "the image's default job file (config/docker/jobs.yaml)", mounted over at /etc/sluice/jobs.yaml
    const jobCopy = final.find((i) => i.op === 'COPY' && i.args.endsWith('/etc/sluice/jobs.yaml'))!.args.split(/\s+/)[0]!;
    expect(docker).toContain(`default job file (${jobCopy})`);
    expect(docker).toContain(':/etc/sluice/jobs.yaml:ro"');
    expect(docker).toContain('-v sluice-data:/data');
    // "multi-stage (`npm ci`, `npm run build`, then `npm prune --omit=dev` in the build stage)"
    expect(docker).toContain('multi-stage (`npm ci`, `npm run build`, then `npm prune --omit=dev` in the build stage)');
    expect(docker).toContain('runs the compiled `dist/`');
    expect(docker).toContain('The image is `node:24-slim`');
    // "`NODE_OPTIONS=--max-semi-space-size=8`"
    const nodeOptions = /NODE_OPTIONS=(\S+)/.exec(env)![1]!;
    expect(nodeOptions).toMatch(/^--max-semi-space-size=\d+$/);
    expect(docker).toContain(`\`NODE_OPTIONS=${nodeOptions}\``);
    // "`MALLOC_MMAP_THRESHOLD_=131072` (big buffers given back to the system when freed)"
    const mmapThreshold = /MALLOC_MMAP_THRESHOLD_=(\d+)/.exec(env)![1]!;
    expect(docker).toContain(`\`MALLOC_MMAP_THRESHOLD_=${mmapThreshold}\``);

    // The README's two commands: `npm ci && npx sluice run config/examples/quickstart.yaml`, then `npm test`.
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string>; scripts: Record<string, string> };
    const quick = /```sh\n(npm ci && npx sluice run (\S+))\n```/.exec(readme);
    expect(quick, 'the quickstart command').not.toBeNull();
    expect(existsSync(join(ROOT, quick![2]!))).toBe(true);
    expect(pkg.bin.sluice).toBeDefined();
    expect(readme).toContain('```sh\nnpm test\n```');
    expect(pkg.scripts.test).toMatch(/\bvitest run\b/);
    expect(all.some((i) => i.op === 'RUN' && /\bnpm ci\b/.test(i.args))).toBe(true);
  });

  it('the schedule process the image runs stops within the bound on SIGTERM with exit code 0', async () => {
    const data = await mkdtemp(join(tmpdir(), 'sluice-docker-'));
    // Exactly the image's command, with the job file it copies in place of /etc/sluice/jobs.yaml.
    const jobCopy = final.find((i) => i.op === 'COPY' && i.args.endsWith('/etc/sluice/jobs.yaml'))!.args.split(/\s+/)[0]!;
    const cmd = (JSON.parse(final.find((i) => i.op === 'CMD')!.args) as string[]).map((a) => (a === '/etc/sluice/jobs.yaml' ? join(ROOT, jobCopy) : a));
    expect(cmd[0]).toBe('schedule');
    try {
      const proc = startSluice(cmd, {
        cwd: data,
        env: { SLUICE_DATA: data, SLUICE_SAMPLE_ROWS: '1000', SLUICE_HEALTH_PORT: '0', SLUICE_HEALTH_HOST: imageEnv('SLUICE_HEALTH_HOST'), SLUICE_SCHEDULE: '0 0 1 1 *' },
      });
      await proc.waitFor(/"msg":"scheduled"/, 60_000);
      const sent = performance.now();
      proc.child.kill('SIGTERM');
      const result = await proc.done;
      expect(result.code).toBe(0);
      // Docker sends SIGKILL 10 s after SIGTERM; the process must be gone well before.
      expect(performance.now() - sent).toBeLessThan(10_000);
      expect(logLines(result.stderr).find((l) => l.msg === 'health server listening')?.host).toBe('0.0.0.0');
    } finally {
      await rm(data, { recursive: true, force: true });
    }
  });
});
