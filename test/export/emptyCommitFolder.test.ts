import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readlink, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { folderStore } from '../../connectors/sinks/file/folderStore.ts';
import { manifestCommit, openDestination, openExport, type OutputConfig, writeExport } from '../../src/export/index.ts';
import { committedExport } from '../../src/jobs/output/committedOutput.ts';
import { listFiles } from '../connectors/destinations.ts';
import { numbered, numberedSchema, resolved } from '../connectors/fixtures.ts';

// A writer killed before its first file leaves only its commit folder on disk, empty: no listing of
// objects shows it, so the sweeps must find it as a folder. These tests kill real writers.

const dirs: string[] = [];
async function parentDir(): Promise<string> {
  const parent = await mkdtemp(join(tmpdir(), 'sluice-empty-'));
  dirs.push(parent);
  return parent;
}
afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

const exists = (path: string): Promise<boolean> => stat(path).then(() => true, () => false);
const folders = async (parent: string): Promise<string[]> => (await readdir(join(parent, '.out.sluice', 'v')).catch(() => [] as string[])).sort();
const leases = async (parent: string): Promise<string[]> => (await readdir(join(parent, '.out.sluice'))).filter((n) => n.startsWith('.sluice-lease-')).sort();
const current = async (parent: string): Promise<string> => (await readlink(join(parent, 'out'))).split('/').pop()!;

async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Starts a writer of `output` with `attemptId` in a process of its own, waits until it holds its
 * lease and has made its commit folder inside its first part (no file in it yet), then kills it
 * with SIGKILL: what it leaves is that empty folder and its lease.
 */
async function killedBeforeFirstFile(parent: string, output: OutputConfig, attemptId: string): Promise<void> {
  const child = spawn(process.execPath, [join(import.meta.dirname, 'killedWriterWorker.ts'), JSON.stringify(output), attemptId], { stdio: ['ignore', 'ignore', 'pipe'], env: process.env });
  let err = '';
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
  const area = join(parent, '.out.sluice');
  try {
    await until(`the writer's folder and lease (${err})`, async () => (await exists(join(area, 'v', attemptId))) && (await exists(join(area, `.sluice-lease-${attemptId}`))));
  } finally {
    child.kill('SIGKILL');
  }
  expect(await exited, err).toBe('SIGKILL');
  expect(await readdir(join(area, 'v', attemptId))).toEqual([]);
}

const output = (parent: string): OutputConfig => ({ format: 'csv', path: join(parent, 'out'), max_rows_per_file: 10_000 });

describe('a writer killed before its first file on disk', () => {
  it('leaves no empty commit folder once the next run commits (a new output, then one replacing it)', async () => {
    const parent = await parentDir();
    await killedBeforeFirstFile(parent, output(parent), 'k1');
    await writeExport({ schema: numberedSchema, batches: numbered(10, 10), meta: { executionId: 'e0' } }, resolved(output(parent)));
    expect(await folders(parent)).toEqual([await current(parent)]);
    expect(await leases(parent)).toEqual([]);

    const replaced = await current(parent);
    await killedBeforeFirstFile(parent, output(parent), 'k2');
    await writeExport({ schema: numberedSchema, batches: numbered(10, 10), meta: { executionId: 'e1' } }, resolved(output(parent)));
    // The replaced output stays a minute for its readers; the killed writer's folder is gone.
    expect(await folders(parent)).toEqual([await current(parent), replaced].sort());
    expect(await leases(parent)).toEqual([]);
    expect(await listFiles(join(parent, 'out'))).toEqual(['_SUCCESS', '_manifest.json', 'part-00000-e1.csv']);
  });

  it('leaves no empty commit folder once a run finds the output committed and skips it', async () => {
    const parent = await parentDir();
    await writeExport({ schema: numberedSchema, batches: numbered(10, 10), meta: { executionId: 'e0', totalRowCount: 10, fingerprint: 'f0' } }, resolved(output(parent)));
    await killedBeforeFirstFile(parent, output(parent), 'k1');
    expect(await committedExport(resolved(output(parent)), 'e0', 10, 'f0', new AbortController().signal, manifestCommit)).toBeDefined();
    expect(await folders(parent)).toEqual([await current(parent)]);
    expect(await leases(parent)).toEqual([]);
  });

  it('a resume with the same attempt id writes the export whole and leaves only its folder', async () => {
    const parent = await parentDir();
    await killedBeforeFirstFile(parent, output(parent), 'a1');
    const opened = await openExport(resolved(output(parent)), { executionId: 'e-killed' }, { resume: { attemptId: 'a1' } });
    expect(opened.startRow).toBe(0);
    const summary = await opened.write({ schema: numberedSchema, batches: numbered(1000, 100), meta: { executionId: 'e-killed', totalRowCount: 1000 } });
    expect(summary.rows).toBe(1000);
    expect(await folders(parent)).toEqual(['a1']);
    expect(await current(parent)).toBe('a1');
    expect(await leases(parent)).toEqual([]);
    expect(await listFiles(join(parent, 'out'))).toEqual(['_SUCCESS', '_manifest.json', 'part-00000-e-killed.csv']);
  });

  it("keeps a live writer's empty folder through another commit's sweep; it goes with that writer's abort", async () => {
    const parent = await parentDir();
    await writeExport({ schema: numberedSchema, batches: numbered(10, 10), meta: { executionId: 'e0' } }, resolved(output(parent)));
    // A writer of this process, inside its first file: folder made, lease held, nothing in it yet.
    const destination = openDestination(resolved(output(parent)));
    const tx = await destination.begin({ attemptId: 'live', previous: [] });
    let finish!: () => void;
    const held = new Promise<void>((r) => (finish = r));
    const written = tx.write('part-00000-live.csv', (async function* () {
      await held;
      yield new TextEncoder().encode('n\n1\n');
    })());
    await until("the live writer's folder and lease", async () => (await exists(join(parent, '.out.sluice', 'v', 'live'))) && (await leases(parent)).includes('.sluice-lease-live'));

    const replaced = await current(parent);
    await writeExport({ schema: numberedSchema, batches: numbered(10, 10), meta: { executionId: 'e1' } }, resolved(output(parent)));
    expect(await folders(parent)).toEqual([await current(parent), 'live', replaced].sort());
    expect(await readdir(join(parent, '.out.sluice', 'v', 'live'))).toEqual([]);

    finish();
    await written;
    await tx.abort();
    await destination.close();
    expect(await folders(parent)).toEqual([await current(parent), replaced].sort());
  });
});

describe('the folder store of an output area', () => {
  it('lists an empty folder as its name with a slash, and removes it by that name once empty', async () => {
    const root = await parentDir();
    const area = folderStore(root, { emptyFolders: true });
    await area.put('v/a/part-00000-x.csv', new Uint8Array([1]));
    await area.put('v/b/day=1/part-00000-x.csv', new Uint8Array([1]));
    await rm(join(root, 'v', 'b', 'day=1', 'part-00000-x.csv'));
    await rm(join(root, 'v', 'a', 'part-00000-x.csv'));
    expect((await area.list('')).sort()).toEqual(['v/a/', 'v/b/day=1/']);
    // A prefix is not named by its own listing (the folder asked about is not an object in it).
    expect(await area.list('v/a/')).toEqual([]);
    expect(await area.list('.sluice-lease-')).toEqual([]);
    // Deepest first, whatever the order given.
    await area.delete(['v/b/', 'v/b/day=1/', 'v/a/']);
    expect(await readdir(join(root, 'v'))).toEqual([]);
    // A store that lists objects only (an output folder) names no folder.
    await area.put('v/c/day=1/part-00000-x.csv', new Uint8Array([1]));
    await rm(join(root, 'v', 'c', 'day=1', 'part-00000-x.csv'));
    expect(await folderStore(root).list('')).toEqual([]);
  });

  it('a put whose folder a sweep removed meanwhile makes it again', async () => {
    // A sweep that listed the folder before the writer's lease was stored takes the writer for
    // dead and removes its (still empty) folder; the writer's put must still land.
    const root = await parentDir();
    const area = folderStore(root, { emptyFolders: true });
    let go!: () => void;
    const gate = new Promise<void>((r) => (go = r));
    const put = area.put('v/w/day=1/part-00000-x.csv', (async function* () {
      await gate;
      yield new Uint8Array([1, 2, 3]);
    })());
    await until('the put to make its folder', () => exists(join(root, 'v', 'w', 'day=1')));
    expect(await area.list('')).toEqual(['v/w/day=1/']);
    await area.delete(['v/w/day=1/', 'v/w/']);
    expect(await exists(join(root, 'v', 'w'))).toBe(false);
    go();
    expect((await put).bytes).toBe(3);
    expect(await area.list('')).toEqual(['v/w/day=1/part-00000-x.csv']);
  });
});
