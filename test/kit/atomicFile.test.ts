import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isAtomicTemp, writeFileAtomically, writeJsonAtomically } from '../../src/kit/atomicFile.ts';

const MODULE = join(import.meta.dirname, '../../src/kit/atomicFile.ts');

// strace shows the system calls themselves: the order of fsync and rename cannot be seen otherwise.
const strace = spawnSync('strace', ['-f', '-e', 'trace=none', 'true']);
const straceProblem = strace.error ? 'strace is not installed' : strace.status !== 0 ? `strace cannot trace here (${String(strace.stderr).trim().split('\n')[0]})` : undefined;

describe('writeFileAtomically', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-atomic-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('replaces a file whole from a string, bytes or a stream, makes missing folders, applies the mode, leaves no temp file', async () => {
    const file = join(dir, 'a', 'b', 'state.json');
    await writeJsonAtomically(file, { n: 1 }, { indent: 2, mode: 0o600 });
    expect(await readFile(file, 'utf8')).toBe('{\n  "n": 1\n}\n');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(await writeFileAtomically(file, new Uint8Array([104, 105]))).toBe(2);
    expect(await readFile(file, 'utf8')).toBe('hi');
    const chunks = (async function* () {
      for (let i = 0; i < 100; i++) yield Buffer.from(`${i},`);
    })();
    expect(await writeFileAtomically(file, chunks)).toBe(290);
    expect((await readFile(file, 'utf8')).split(',')).toHaveLength(101);
    expect(await readdir(join(dir, 'a', 'b'))).toEqual(['state.json']);
  });

  it('a body that fails leaves the old file as it was and no temp file; the error passes unchanged', async () => {
    const file = join(dir, 'state.json');
    await writeFile(file, 'old');
    const boom = new Error('the rows failed');
    const failing = (async function* () {
      yield Buffer.from('new, half');
      throw boom;
    })();
    await expect(writeFileAtomically(file, failing)).rejects.toBe(boom);
    expect(await readFile(file, 'utf8')).toBe('old');
    expect(await readdir(dir)).toEqual(['state.json']);
  });

  it('concurrent writers of one file: it ends as one of them whole, never a mix, and no temp file is left', async () => {
    const file = join(dir, 'state.json');
    const values = Array.from({ length: 20 }, (_, i) => ({ writer: i, rows: 'x'.repeat(10_000 + i) }));
    await Promise.all(values.map((v) => writeJsonAtomically(file, v)));
    const final = JSON.parse(await readFile(file, 'utf8')) as { writer: number; rows: string };
    expect(final).toEqual(values[final.writer]);
    expect(await readdir(dir)).toEqual(['state.json']);
  });

  it('a writer killed mid-write leaves the old file whole and a temp file that isAtomicTemp recognises', async () => {
    const file = join(dir, 'state.json');
    await writeFile(file, '{"old":true}\n');
    // The child writes a first chunk, says so, then waits for ever: it is killed between write and rename.
    const script = `
      import { writeFileAtomically } from ${JSON.stringify(MODULE)};
      const body = (async function* () { yield Buffer.from('{"new":'); process.stdout.write('started\\n'); await new Promise(() => {}); })();
      await writeFileAtomically(${JSON.stringify(file)}, body);
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => d.toString().includes('started') && resolve());
      child.on('exit', (code) => reject(new Error(`the writer exited (${code}) before writing`)));
    });
    child.kill('SIGKILL');
    await new Promise((resolve) => child.on('exit', resolve));
    expect(await readFile(file, 'utf8')).toBe('{"old":true}\n');
    const left = (await readdir(dir)).filter((n) => n !== 'state.json');
    expect(left).toHaveLength(1);
    expect(left.map(isAtomicTemp)).toEqual([true]);
    expect(['state.json', 'state.json.tmp', 'other.json'].map(isAtomicTemp)).toEqual([false, false, false]);
  });

  it.skipIf(straceProblem !== undefined)(`syncs the temp file before the rename, and the folder after it${straceProblem ? ` (skipped: ${straceProblem})` : ''}`, async () => {
    const file = join(dir, 'state.json');
    const script = `import { writeJsonAtomically } from ${JSON.stringify(MODULE)}; await writeJsonAtomically(${JSON.stringify(file)}, { n: 1 });`;
    // One trace file per thread (-ff), so no call is split across lines; -ttt orders them across threads.
    const out = join(dir, 'trace');
    const traced = spawnSync('strace', ['-f', '-ff', '-ttt', '-o', out, '-e', 'trace=openat,fsync,fdatasync,rename,renameat,renameat2', process.execPath, '--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(traced.status, traced.stderr).toBe(0);
    const traces = (await readdir(dir)).filter((n) => n.startsWith('trace.'));
    const calls = (await Promise.all(traces.map((n) => readFile(join(dir, n), 'utf8'))))
      .flatMap((text) => text.split('\n'))
      .filter((l) => l !== '')
      .sort((a, b) => Number(a.split(' ')[0]) - Number(b.split(' ')[0]));
    const fdOf = (line: string | undefined) => (line === undefined ? undefined : /= (\d+)$/.exec(line)?.[1]);
    const tempFd = fdOf(calls.find((l) => l.includes('openat(') && l.includes('.state.json.tmp-')));
    const renameAt = calls.findIndex((l) => /rename(at2?)?\(/.test(l) && l.includes('.state.json.tmp-') && l.includes(`${file}"`));
    expect(tempFd).toBeDefined();
    expect(renameAt).toBeGreaterThan(-1);
    const syncs = (fd: string | undefined) => calls.map((l, i) => (new RegExp(` f(data)?sync\\(${fd}\\)`).test(l) ? i : -1)).filter((i) => i >= 0);
    expect(syncs(tempFd).some((i) => i < renameAt)).toBe(true);
    // The folder, opened after the rename and synced.
    const folderFd = fdOf(calls.slice(renameAt).find((l) => l.includes('openat(') && l.includes(`"${dir}"`)));
    expect(folderFd).toBeDefined();
    expect(syncs(folderFd).some((i) => i > renameAt)).toBe(true);
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({ n: 1 });
  });
});
