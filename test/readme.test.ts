// The README's commands as a reader runs them: in a shell of the machine the README describes,
// whose own Node may be older than the project's (the README says so), not through npm scripts.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ROOT } from './cli/sluiceProcess.ts';
import { startTestService } from './helpers/service.ts';

const run = promisify(execFile);
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

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
});
