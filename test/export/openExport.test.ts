import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RecordBatch } from 'apache-arrow';
import { afterAll, describe, expect, it } from 'vitest';
import { openExport, type OutputConfig, writeExport } from '../../src/export/index.ts';
import { skipRows } from '../../src/jobs/skipRows.ts';
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

async function journalParts(parent: string): Promise<number> {
  for (const name of await readdir(parent)) {
    const text = await readFile(join(parent, name, '.sluice-journal'), 'utf8').catch(() => undefined);
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
    expect((await readdir(parent)).sort()).toEqual(['out', 'ref']);
  });

  it('keeps nothing when the layout changed (rows per file), and empties the old staging area', async () => {
    const parent = await parentDir();
    const output = { format: 'csv', path: join(parent, 'out'), max_rows_per_file: 200 };
    await killedExport(output, 'a2', 500, 2);
    const changed = await openExport(resolved({ ...output, max_rows_per_file: 300 }), { executionId: 'e-res' }, { resume: { attemptId: 'a2' } });
    expect(changed.startRow).toBe(0);
    expect((await listFiles(join(parent, '.out.sluice-staging-a2'))).filter((n) => !n.startsWith('.'))).toEqual([]);
    await changed.discard();
    expect(await readdir(parent)).toEqual([]);
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

  it('removes staging areas of other attempts whose process is gone, keeps those of a live one', async () => {
    const parent = await parentDir();
    const dead = join(parent, '.out.sluice-staging-dead');
    const live = join(parent, '.out.sluice-staging-live');
    const oldCommit = join(parent, '.out.sluice-staging-dead2.old');
    const output = { format: 'csv', path: join(parent, 'out') };
    await writeExport({ schema: numberedSchema, batches: numbered(10, 10), meta: { executionId: 'e0' } }, resolved(output));
    for (const d of [dead, live, oldCommit]) await mkdir(d, { recursive: true });
    await writeFile(join(dead, '.sluice-owner'), `${hostname()} 999999999\n`);
    await writeFile(join(live, '.sluice-owner'), `${hostname()} ${process.pid}\n`);
    await writeFile(join(oldCommit, 'part-00000-x.csv'), 'old');
    await writeExport({ schema: numberedSchema, batches: numbered(10, 10), meta: { executionId: 'e1' } }, resolved(output));
    expect(existsSync(dead)).toBe(false);
    expect(existsSync(oldCommit)).toBe(false);
    expect(existsSync(live)).toBe(true);
    expect((await readdir(parent)).sort()).toEqual(['.out.sluice-staging-live', 'out']);
    expect(await listFiles(join(parent, 'out'))).toEqual(['_SUCCESS', '_manifest.json', 'part-00000-e1.csv']);
  });

  it('puts the previous output back when a commit was killed between its two renames', async () => {
    const parent = await parentDir();
    const output = { format: 'csv', path: join(parent, 'out') };
    await writeExport({ schema: numberedSchema, batches: numbered(10, 10), meta: { executionId: 'e0' } }, resolved(output));
    // The killed commit had moved the output aside and not yet moved the new one in.
    await rename(join(parent, 'out'), join(parent, '.out.sluice-staging-gone.old'));
    await writeExport({ schema: numberedSchema, batches: numbered(20, 10), meta: { executionId: 'e1' } }, resolved(output));
    expect(await listFiles(join(parent, 'out'))).toEqual(['_SUCCESS', '_manifest.json', 'part-00000-e1.csv']);
    expect(await readdir(parent)).toEqual(['out']);
  });

  it('puts the previous output back at once when the killed commit left its new output beside it', async () => {
    const parent = await parentDir();
    const output = { format: 'csv', path: join(parent, 'out') };
    await writeExport({ schema: numberedSchema, batches: numbered(10, 10), meta: { executionId: 'e0' } }, resolved(output));
    // Killed between its renames, right after removing its owner file: the new output staged (and
    // just changed, so a sweep gives it a minute) and the committed one aside.
    await rename(join(parent, 'out'), join(parent, '.out.sluice-staging-k.old'));
    await mkdir(join(parent, '.out.sluice-staging-k'));
    await writeFile(join(parent, '.out.sluice-staging-k', 'part-00000-e1.csv'), 'id\n1\n');
    const r = resolved(output);
    const destination = r.sink.create(r.sinkConfig);
    expect(JSON.parse(new TextDecoder().decode((await destination.read('_manifest.json'))!))).toMatchObject({ execution_id: 'e0' });
    await destination.close();
    expect((await readdir(parent)).sort()).toEqual(['.out.sluice-staging-k', 'out']);
  });
});
