// The entry point as a user meets it: an old Node, and npx on a system whose own Node is older.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, sluiceEntry, testEnv } from './sluiceProcess.ts';

describe('bin/sluice.js', () => {
  it('on a Node older than 24 says what to do instead of crashing on the .ts extension', () => {
    // Node 24 pretending to be 20: the check reads process.versions.node before importing any .ts file.
    const pretend = 'data:text/javascript,Object.defineProperty(process.versions,"node",{value:"20.11.1"})';
    const result = spawnSync('node', ['--import', pretend, sluiceEntry(), '--version'], { env: testEnv(), encoding: 'utf8' });
    expect(result.stderr).toBe("sluice needs Node 24 (this is Node 20.11.1); run it through npx or npm scripts, which use the project's own Node 24\n");
    expect(result.stderr).not.toContain('ERR_UNKNOWN_FILE_EXTENSION');
    expect(result.status).toBe(2);
    expect(result.stdout).toBe('');
  });

  it('npm (so npx) prints no engine warning about the project, whatever Node runs npm itself', async () => {
    // The system's npm (not node_modules/.bin): its own Node may be older than the project's Node 24.
    // npm checks the root package's `engines` whenever it builds the dependency tree (as npx does in a
    // fresh clone); a dry-run install of the manifest alone builds that tree offline.
    const systemPath = (process.env.PATH ?? '').split(delimiter).filter((p) => !p.startsWith(join(ROOT, 'node_modules')));
    const npm = systemPath.map((p) => join(p, 'npm')).find((p) => existsSync(p));
    if (npm === undefined) return;
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<string, unknown>;
    for (const key of ['dependencies', 'devDependencies', 'peerDependencies', 'peerDependenciesMeta', 'scripts', 'bin']) delete manifest[key];
    const dir = await mkdtemp(join(tmpdir(), 'sluice-engines-'));
    try {
      await writeFile(join(dir, 'package.json'), JSON.stringify(manifest));
      const env = Object.fromEntries(Object.entries(testEnv()).filter(([k]) => !k.toLowerCase().startsWith('npm_')));
      const result = spawnSync(npm, ['install', '--dry-run', '--offline', '--no-audit', '--no-fund'], { cwd: dir, env: { ...env, PATH: systemPath.join(delimiter) }, encoding: 'utf8', timeout: 120_000 });
      expect(result.status, result.stderr).toBe(0);
      expect(result.stderr).not.toContain('EBADENGINE');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
