// A checkout must be importable as `sluice` after the README's install command alone (`npm ci`),
// as a git dependency is: npm runs a package's `prepare` script on `npm ci` and `npm install` in
// its folder and when it installs it from git, and `exports` points at the compiled dist/.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ROOT, testEnv } from '../cli/sluiceProcess.ts';
import { checkoutCopy } from './checkoutCopy.ts';

const run = promisify(execFile);

describe('a fresh checkout', () => {
  it('builds dist/ in the prepare script npm ci runs, so `import ... from "sluice"` works', async () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.prepare, 'a prepare script').toBeDefined();
    const copy = await checkoutCopy();
    try {
      expect(existsSync(join(copy.dir, 'dist'))).toBe(false);
      await run('npm', ['run', 'prepare'], { cwd: copy.dir, env: testEnv(), maxBuffer: 64 << 20 });
      const script = join(copy.dir, 'use.mjs');
      await writeFile(script, "import { ServiceClient, stream } from 'sluice';\nimport { startService } from 'sluice/service';\nconsole.log(typeof ServiceClient, typeof stream, typeof startService);\n");
      const { stdout } = await run(process.execPath, [script], { cwd: copy.dir, env: testEnv() });
      expect(stdout.trim()).toBe('function function function');
    } finally {
      await copy.remove();
    }
  }, 180_000);

  it('skips the build where the sources are not there yet (an image installs before it copies them)', async () => {
    const copy = await checkoutCopy();
    try {
      const { rm } = await import('node:fs/promises');
      await rm(join(copy.dir, 'src'), { recursive: true });
      await run('npm', ['run', 'prepare'], { cwd: copy.dir, env: testEnv() });
      expect(existsSync(join(copy.dir, 'dist'))).toBe(false);
    } finally {
      await copy.remove();
    }
  }, 60_000);
});
