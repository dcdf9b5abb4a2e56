import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { builtins, file } from '../../connectors/index.ts';
import { checkOutputs } from '../../src/export/index.ts';
import { DestinationCheckError } from '../../src/kit/index.ts';
import { resolved } from './fixtures.ts';

const dirs: string[] = [];
afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

describe('the file sink checks its folder before anything is spent', () => {
  // Node's recursive mkdir retries for ever under /proc (it reports ENOENT for a level it cannot
  // make), so a loop would end only at the test's timeout; the check makes folders one level at a
  // time and fails at once.
  it.runIf(process.platform === 'linux')('an output folder that cannot be created (under /proc) fails the check at once, naming the folder', async () => {
    const error = await checkOutputs([resolved({ format: 'csv', path: '/proc/sluice-no-such/out' }, builtins)], new AbortController().signal).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DestinationCheckError);
    expect((error as Error).message).toContain('cannot make or write the folder /proc/sluice-no-such');
    expect((error as Error).message).toContain('point the export at a folder you can write');
  });

  it('a path under a file names the file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sluice-check-'));
    dirs.push(dir);
    await writeFile(join(dir, 'plain'), 'x');
    const store = file.create({ url: join(dir, 'plain', 'deeper', 'out') });
    await expect(store.check!()).rejects.toThrow(`${join(dir, 'plain')} is a file, so no folder can be made under it`);
  });
});
