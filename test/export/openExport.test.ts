import { createHash } from 'node:crypto';
import { cp, mkdir, mkdtemp, readdir, readFile, readlink, realpath, rename, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RecordBatch } from 'apache-arrow';
import { afterAll, describe, expect, it } from 'vitest';
import { openDestination, openExport, type OutputConfig, writeExport } from '../../src/export/index.ts';
import { skipRows } from '../../src/jobs/run/skipRows.ts';
import { listFiles } from '../connectors/destinations.ts';
import { numbered, numberedSchema, resolved } from '../connectors/fixtures.ts';

const dirs: string[] = [];
async function parentDir(): Promise<string> {
  const parent = await mkdtemp(join(tmpdir(), 'sluice-open-'));
  dirs.push(parent);
  return parent;
}
afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

/** The first `rows` rows of `batches`, then nothing ever again: a process killed mid-export. */
async function* thenHang(batches: AsyncIterable<RecordBatch>, rows: number): AsyncIterable<RecordBatch> {
  let seen = 0;
  for await (const batch of batches) {
    if (seen >= rows) break;
    seen += batch.numRows;
    yield batch;
  }
  await new Promise(() => undefined);
}

async function hashes(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of await listFiles(dir)) {
    if (name === '_manifest.json') continue;
    out[name] = createHash('sha256').update(await readFile(join(dir, name))).digest('hex');
  }
  return out;
}

/** Parts listed by the resume journal in the private area of the output `out` in `parent`. */
async function journalParts(parent: string): Promise<number> {
  const area = join(parent, '.out.sluice');
  for (const name of await readdir(area).catch(() => [] as string[])) {
    if (!name.startsWith('.sluice-journal-')) continue;
    const text = await readFile(join(area, name), 'utf8').catch(() => undefined);
    if (text !== undefined) return (JSON.parse(text) as { parts: unknown[] }).parts.length;
  }
  return 0;
}

/** Starts an export that stalls after `rows` rows and never finishes, once `parts` parts are journaled. */
async function killedExport(output: OutputConfig, attemptId: string, rows: number, parts: number): Promise<void> {
  const opened = await openExport(resolved(output), { executionId: 'e-res' }, { resume: { attemptId } });
  void opened.write({ schema: numberedSchema, batches: thenHang(numbered(1000, 100), rows), meta: { executionId: 'e-res', pageSize: 100 } });
  const parent = join((output as { path: string }).path, '..');
  const deadline = Date.now() + 10_000;
  while ((await journalParts(parent)) < parts && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  expect(await journalParts(parent)).toBe(parts);
}

describe('openExport (resume)', () => {
  it('keeps the complete parts of a killed attempt and writes the rest: identical to an uninterrupted export', async () => {
    const parent = await parentDir();
    const output = { format: 'parquet', path: join(parent, 'out'), max_rows_per_file: 200 };
    await killedExport(output, 'a1', 500, 2); // parts 0 and 1 done, part 2 half written

    const opened = await openExport(resolved(output), { executionId: 'e-res' }, { resume: { attemptId: 'a1' } });
    expect(opened.startRow).toBe(400);
    expect(opened.pageSize).toBe(100);
    expect(opened.resumedFiles.map((f) => f.rows)).toEqual([200, 200]);
    const summary = await opened.write({ schema: numberedSchema, batches: skipRows(numbered(1000, 100), 400), meta: { executionId: 'e-res', totalRowCount: 1000 } });
    expect(summary).toMatchObject({ rows: 1000, resumedFiles: 2, resumedRows: 400 });
    expect(summary.files.map((f) => f.rows)).toEqual([200, 200, 200, 200, 200]);

    const ref = join(parent, 'ref');
    await writeExport({ schema: numberedSchema, batches: numbered(1000, 100), meta: { executionId: 'e-res' } }, resolved({ ...output, path: ref }));
    expect(await hashes(join(parent, 'out'))).toEqual(await hashes(ref));
    expect((await readdir(parent)).sort()).toEqual(['.out.sluice', '.ref.sluice', 'out', 'ref']);
    const folder = (await readlink(join(parent, 'out'))).slice('.out.sluice/'.length);
    // Besides the output's folder, only the temp file of the part the stalled writer still writes
    // (a killed process's goes once it is an hour old).
    const area = (await listFiles(join(parent, '.out.sluice'))).filter((n) => !n.startsWith('.sluice-put-'));
    expect(area).toEqual((await listFiles(join(parent, 'out'))).map((n) => `${folder}/${n}`));
  });

  it('keeps nothing when the layout changed (rows per file), and empties the old staging area', async () => {
    const parent = await parentDir();
    const output = { format: 'csv', path: join(parent, 'out'), max_rows_per_file: 200 };
    await killedExport(output, 'a2', 500, 2);
    const changed = await openExport(resolved({ ...output, max_rows_per_file: 300 }), { executionId: 'e-res' }, { resume: { attemptId: 'a2' } });
    expect(changed.startRow).toBe(0);
    expect(await listFiles(join(parent, '.out.sluice', 'v', 'a2'))).toEqual([]);
    await changed.discard();
    // Nothing but the temp file of the part the stalled writer still writes.
    expect((await listFiles(parent)).map((n) => n.replace(/[0-9a-f]{12}/, 'x'))).toEqual(['.out.sluice/.sluice-put-x.tmp']);
  });

  it('does not resume an output rolled by bytes: it is written from row 0', async () => {
    const parent = await parentDir();
    const output = { format: 'csv', path: join(parent, 'out'), max_bytes_per_file: 2048 };
    const first = await openExport(resolved(output), { executionId: 'e-res' }, { resume: { attemptId: 'a3' } });
    void first.write({ schema: numberedSchema, batches: thenHang(numbered(1000, 100), 500), meta: { executionId: 'e-res' } });
    await new Promise((r) => setTimeout(r, 100));
    expect(await journalParts(parent)).toBe(0);
    const again = await openExport(resolved(output), { executionId: 'e-res' }, { resume: { attemptId: 'a3' } });
    expect(again.startRow).toBe(0);
    const summary = await again.write({ schema: numberedSchema, batches: numbered(1000, 100), meta: { executionId: 'e-res', totalRowCount: 1000 } });
    expect(summary.resumedFiles).toBe(0);
    expect(summary.rows).toBe(1000);
  });

  it('a failed export leaves no commit folder behind, not even an empty one', async () => {
    const parent = await parentDir();
    const output = resolved({ format: 'csv', path: join(parent, 'out') });
    // The source fails after its first batch: the first part's write had made its folder.
    await expect(writeExport({ schema: numberedSchema, batches: numbered(1000, 100, 100), meta: { executionId: 'e-fail' } }, output)).rejects.toThrow(/source failed/);
    expect(await readdir(join(parent, '.out.sluice', 'v')).catch(() => [])).toEqual([]);
    expect(await readdir(parent)).not.toContain('out');
  });

  it('removes commit folders of other attempts whose writer is gone, keeps those of a live one', async () => {
    const parent = await parentDir();
    const area = join(parent, '.out.sluice');
    const output = { format: 'csv', path: join(parent, 'out') };
    await writeExport({ schema: numberedSchema, batches: numbered(10, 10), meta: { executionId: 'e0' } }, resolved(output));
    const replaced = await readlink(join(parent, 'out'));
    for (const id of ['dead', 'live', 'nolease']) {
      await mkdir(join(area, 'v', id), { recursive: true });
      await writeFile(join(area, 'v', id, 'part-00000-x.csv'), 'old');
    }
    await writeFile(join(area, '.sluice-lease-dead'), JSON.stringify({ host: hostname(), pid: 2 ** 31 - 1, token: 't' }));
    // A writer running in another process of this host (the test runner's parent stands in for it).
    await writeFile(join(area, '.sluice-lease-live'), JSON.stringify({ host: hostname(), pid: process.ppid, token: 't' }));
    await writeExport({ schema: numberedSchema, batches: numbered(10, 10), meta: { executionId: 'e1' } }, resolved(output));
    const current = await readlink(join(parent, 'out'));
    // The output the commit replaced stays for readers until the next sweep.
    expect((await readdir(join(area, 'v'))).sort()).toEqual(['live', current.split('/').pop()!, replaced.split('/').pop()!].sort());
    expect((await readdir(area)).filter((n) => n.startsWith('.sluice-lease-'))).toEqual(['.sluice-lease-live']);
    expect(await readdir(parent)).toEqual(['.out.sluice', 'out']);
    expect(await listFiles(join(parent, 'out'))).toEqual(['_SUCCESS', '_manifest.json', 'part-00000-e1.csv']);
  });

  it('takes over an output folder written by an older sluice: replaced, or appended to with its files kept', async () => {
    const parent = await parentDir();
    const path = join(parent, 'out');
    await olderLayout(parent, 'e0');
    await writeExport({ schema: numberedSchema, batches: numbered(20, 10), meta: { executionId: 'e1' } }, resolved({ format: 'csv', path }));
    expect(await listFiles(path)).toEqual(['_SUCCESS', '_manifest.json', 'part-00000-e1.csv']);
    expect((await readlink(path)).startsWith('.out.sluice/v/')).toBe(true);
    // The older folder moved beside the commit folders, kept a minute for its readers as any replaced output.
    const folders = await readdir(join(parent, '.out.sluice', 'v'));
    expect(folders.filter((f) => !f.startsWith('older-'))).toEqual([(await readlink(path)).split('/').pop()]);
    expect(folders.filter((f) => f.startsWith('older-'))).toHaveLength(1);

    const other = await parentDir();
    await olderLayout(other, 'e0');
    const appended = { format: 'csv', path: join(other, 'out'), mode: 'append' as const };
    await writeExport({ schema: numberedSchema, batches: numbered(20, 10), meta: { executionId: 'e1' } }, resolved(appended));
    expect(await listFiles(join(other, 'out'))).toEqual(['_SUCCESS', '_manifest.json', 'part-00000-e0.csv', 'part-00000-e1.csv']);
  });

  it('a takeover killed between its renames: the next look at the output puts the new link in place', async () => {
    const parent = await parentDir();
    const path = join(parent, 'out');
    await writeExport({ schema: numberedSchema, batches: numbered(10, 10), meta: { executionId: 'e0' } }, resolved({ format: 'csv', path }));
    // The older folder moved into the area, the link made but not yet renamed into place.
    await rename(path, join(parent, '.out.sluice', '.takeover'));
    const destination = openDestination(resolved({ format: 'csv', path }));
    expect(JSON.parse(new TextDecoder().decode((await destination.read('_manifest.json'))!))).toMatchObject({ execution_id: 'e0' });
    await destination.close();
    expect(await listFiles(path)).toEqual(['_SUCCESS', '_manifest.json', 'part-00000-e0.csv']);
  });
});

/** The output folder `out` in `parent` as an older sluice left it: a real folder holding the committed export of `executionId`. */
async function olderLayout(parent: string, executionId: string): Promise<void> {
  const source = join(parent, 'source');
  await writeExport({ schema: numberedSchema, batches: numbered(10, 10), meta: { executionId } }, resolved({ format: 'csv', path: source }));
  await cp(await realpath(source), join(parent, 'out'), { recursive: true });
  await rm(source);
  await rm(join(parent, '.source.sluice'), { recursive: true });
}
