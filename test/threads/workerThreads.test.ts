import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startWorker } from '../../src/threads/workerThreads.ts';
import { ROOT, sluiceEntry, testEnv } from '../cli/sluiceProcess.ts';

// Every thread sluice starts goes through startWorker, which turns on Node's compile cache in the
// thread before loading its module. The cache must only ever help: moved by NODE_COMPILE_CACHE, off
// with NODE_DISABLE_COMPILE_CACHE, and a directory that cannot be made changes nothing else.
// (Tests run as root here, where a read-only directory is still writable; a path below a regular
// file is a directory nobody can create.)

const work = mkdtempSync(join(tmpdir(), 'sluice-threads-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const notADirectory = join(work, 'a-file');
writeFileSync(notADirectory, 'not a directory');

interface Probe {
  readonly workerData: unknown;
  readonly cacheDir: string | undefined;
  readonly typeStripper: boolean;
}

/** This process's environment with the cache variables as given (left out when undefined). */
function withCache(env: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...process.env };
  delete out.NODE_COMPILE_CACHE;
  delete out.NODE_DISABLE_COMPILE_CACHE;
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
  return out;
}

/** Starts test/helpers/probeThread.ts with `env` and returns its answer once the thread has ended. */
async function probe(env: Record<string, string | undefined>): Promise<Probe> {
  const worker = startWorker('probeThread', new URL('../helpers/probeThread.ts', import.meta.url).href, {
    workerData: { part: 7 },
    env: withCache(env),
  });
  // Both listened for at once: a thread that ends right after answering emits both in one go.
  const [[answer], [code]] = (await Promise.all([once(worker, 'message'), once(worker, 'exit')])) as [[Probe], [number]];
  expect(code).toBe(0);
  return answer;
}

describe('startWorker', () => {
  it('runs the module with its own workerData, its compile cache on in NODE_COMPILE_CACHE, and writes the cache before the thread ends', async () => {
    const dir = join(work, 'cache', 'made-on-first-use');
    const answer = await probe({ NODE_COMPILE_CACHE: dir });
    expect(answer.workerData).toEqual({ part: 7 });
    expect(answer.cacheDir?.startsWith(dir)).toBe(true);
    // The thread's own module was compiled and stored: a later thread reads it instead of compiling.
    expect(readdirSync(answer.cacheDir!).length).toBeGreaterThan(0);
  });

  it('a thread started again from the sources finds them stripped in the cache: the type stripper of Node (~15 MB) is never loaded', async () => {
    // The cache in its default place (below TMPDIR): a NODE_COMPILE_CACHE would turn it on before the thread's first line.
    const env = { TMPDIR: join(work, 'tmp-thread') };
    // The first thread strips the TypeScript (the probe) and stores it; the second reads it back.
    expect((await probe(env)).typeStripper).toBe(true);
    expect((await probe(env)).typeStripper).toBe(false);
  });

  it('NODE_DISABLE_COMPILE_CACHE=1 turns the cache off: nothing written', async () => {
    const dir = join(work, 'disabled');
    const answer = await probe({ NODE_COMPILE_CACHE: dir, NODE_DISABLE_COMPILE_CACHE: '1' });
    expect(answer.workerData).toEqual({ part: 7 });
    expect(answer.cacheDir).toBeUndefined();
    expect(existsSync(dir)).toBe(false);
  });

  it('a cache directory that cannot be created leaves the thread running without a cache', async () => {
    const answer = await probe({ NODE_COMPILE_CACHE: join(notADirectory, 'cache') });
    expect(answer.workerData).toEqual({ part: 7 });
    expect(answer.cacheDir).toBeUndefined();
  });

  it('a module that fails to load fails the thread with its error, as a plain Worker would', async () => {
    const worker = startWorker('noSuchThread', import.meta.url);
    const [error] = (await once(worker, 'error')) as [Error];
    expect(error.message).toMatch(/noSuchThread/);
  });
});

/** A module given to `node --import` that writes, as the process exits, whether Node's type stripper was loaded. */
const STRIPPER_REPORT = `data:text/javascript,${encodeURIComponent("process.on('exit', () => process.stderr.write('type stripper loaded: ' + process.moduleLoadList.some((m) => m.includes('amaro')) + '\\n'))")}`;

describe('the CLI and the compile cache', () => {
  it('a second run of sluice from the sources takes every module from the cache: the type stripper is never loaded', () => {
    // As a user runs it: no NODE_COMPILE_CACHE (which would turn the cache on before the first line), the cache in its default place below TMPDIR.
    const env = testEnv({ NODE_COMPILE_CACHE: undefined, TMPDIR: join(work, 'tmp-cli'), NODE_OPTIONS: `--import=${STRIPPER_REPORT}` });
    const runs = [0, 1].map(() => spawnSync('node', [sluiceEntry(), '--help'], { cwd: ROOT, encoding: 'utf8', env }));
    for (const run of runs) expect(run.status).toBe(0);
    // The process that replaces itself with its memory settings writes nothing: it never exits.
    expect(runs[0]!.stderr.trim()).toBe('type stripper loaded: true');
    expect(runs[1]!.stderr.trim()).toBe('type stripper loaded: false');
  });


  it('sluice runs with the cache moved, with it off, and with a directory that cannot be created', () => {
    const cases: [Record<string, string>, boolean][] = [
      [{ NODE_COMPILE_CACHE: join(work, 'cli-cache') }, true],
      [{ NODE_COMPILE_CACHE: join(work, 'cli-off'), NODE_DISABLE_COMPILE_CACHE: '1' }, false],
      [{ NODE_COMPILE_CACHE: join(notADirectory, 'cli-cache') }, false],
    ];
    for (const [env, written] of cases) {
      const run = spawnSync('node', [sluiceEntry(), 'validate', join(ROOT, 'config/examples/quickstart.yaml')], { cwd: ROOT, encoding: 'utf8', env: testEnv(env) });
      expect(run.stderr).toBe('');
      expect(run.status).toBe(0);
      expect(existsSync(env.NODE_COMPILE_CACHE!)).toBe(written);
    }
  });
});
