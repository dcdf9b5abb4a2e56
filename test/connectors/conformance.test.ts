import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { RecordBatch } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtins } from '../../connectors/index.ts';
import { writeExport } from '../../src/export/index.ts';
import { startLocalS3, type LocalS3 } from '../helpers/s3.ts';
import { startAzurite, type LocalAzure } from '../helpers/azurite.ts';
import { startLocalGcs, type LocalGcs } from '../helpers/gcs.ts';
import { azureDestinationForTests, cleanupScratch, fileDestinationForTests, gcsDestinationForTests, s3DestinationForTests, type TestDestination } from './destinations.ts';
import { EVERY_TYPE_EXPECTED, everyTypeBatch, fromArray, numbered, numberedSchema, resolved } from './fixtures.ts';
import { readBack, renderJson } from './readBack.ts';

// One suite, every format x destination of the built-in registry: the guarantees do not depend on
// the combination. A format joins the matrix by being registered (with its default options, plus the
// option sets below); a multi-file sink must have a test destination here, or the suite fails.
const OPTION_SETS: Record<string, readonly Record<string, unknown>[]> = {
  parquet: [{ compression: 'zstd', row_group_size: 100 }],
  arrow: [{}, { container: 'file' }],
};
const FORMATS = builtins.formats.flatMap((descriptor) =>
  (OPTION_SETS[descriptor.type] ?? [{}]).map((options) => ({
    format: descriptor.type,
    extension: descriptor.create(descriptor.config.parse(options)).extension,
    options,
  })),
);

let s3: LocalS3;
let azure: LocalAzure;
let gcs: LocalGcs;
const BUCKET = 'conformance';

beforeAll(async () => {
  [s3, azure, gcs] = await Promise.all([startLocalS3(), startAzurite(), startLocalGcs()]);
  await Promise.all([s3.createBucket(BUCKET), azure.createContainer(BUCKET), gcs.createBucket(BUCKET)]);
});
afterAll(async () => {
  // Every request and answer of the GCS stand-in followed Google's published description of the API.
  expect(gcs?.violations).toEqual([]);
  await Promise.all([s3?.stop(), azure?.stop(), gcs?.stop()]);
  await cleanupScratch();
});

const TEST_DESTINATIONS: Record<string, () => TestDestination> = {
  file: fileDestinationForTests,
  s3: () => s3DestinationForTests(() => s3, BUCKET),
  azure: () => azureDestinationForTests(() => azure, BUCKET),
  gcs: () => gcsDestinationForTests(() => gcs, BUCKET),
};
const DESTINATIONS: TestDestination[] = builtins.sinks
  .filter((sink) => sink.multiFile !== false)
  .map((sink) => {
    const make = TEST_DESTINATIONS[sink.type];
    if (!make) throw new Error(`the multi-file sink ${sink.type} has no test destination in the conformance suite`);
    return make();
  });

const dataFiles = (names: string[]) => names.filter((n) => !n.startsWith('_'));

async function* abortAfter(batches: AsyncIterable<RecordBatch>, count: number, controller: AbortController): AsyncIterable<RecordBatch> {
  let n = 0;
  for await (const b of batches) {
    if (n++ === count) controller.abort(new Error('stop requested'));
    yield b;
  }
}

for (const destination of DESTINATIONS) {
  for (const f of FORMATS) {
    const label = `${f.format}${typeof f.options.container === 'string' ? `(${f.options.container})` : ''} -> ${destination.kind}`;
    const readerFormat = f.format;

    describe(label, () => {
      const output = (target: { output: { path: string } }, extra: object = {}) => ({ format: f.format, format_options: f.options, ...target.output, ...extra });

      it('writes an empty result as one file with the schema, manifest and _SUCCESS', async () => {
        const target = await destination.fresh();
        const summary = await writeExport({ schema: numberedSchema, batches: fromArray([]), meta: { executionId: 'e-empty', totalRowCount: 0 } }, resolved(output(target)));
        const { names, dir } = await target.visible();
        expect(names).toEqual(['_SUCCESS', '_manifest.json', `part-00000-e-empty.${f.extension}`]);
        expect(summary.rows).toBe(0);
        const back = await readBack(readerFormat, [join(dir, `part-00000-e-empty.${f.extension}`)], numberedSchema);
        expect(back.id).toEqual([]);
      });

      it('writes one row of every type, read back value by value', async () => {
        const batch = everyTypeBatch().slice(0, 1);
        const target = await destination.fresh();
        await writeExport({ schema: batch.schema, batches: fromArray([batch]), meta: { executionId: 'e-one', totalRowCount: 1 } }, resolved(output(target)));
        const { names, dir } = await target.visible();
        const back = await readBack(readerFormat, dataFiles(names).map((n) => join(dir, n)), batch.schema);
        const expected = readerFormat === 'arrow' ? renderJson(batch.schema, [batch]) : mapValues(EVERY_TYPE_EXPECTED, (v) => v.slice(0, 1));
        expect(back).toEqual(expected);
      });

      it('writes every type, including int64 beyond 2^53, decimals, UTC timestamps, uint256 and nested values', async () => {
        const batch = everyTypeBatch();
        const target = await destination.fresh();
        await writeExport(
          { schema: batch.schema, batches: fromArray([batch.slice(0, 2), batch.slice(2)]), meta: { executionId: 'e-types', totalRowCount: 5 } },
          resolved(output(target)),
        );
        const { names, dir } = await target.visible();
        const back = await readBack(readerFormat, dataFiles(names).map((n) => join(dir, n)), batch.schema);
        expect(back).toEqual(readerFormat === 'arrow' ? renderJson(batch.schema, [batch]) : EVERY_TYPE_EXPECTED);
      });

      it('writes many batches rolled into files, with a manifest that matches the bytes', async () => {
        const target = await destination.fresh();
        const summary = await writeExport(
          { schema: numberedSchema, batches: numbered(1000, 37), meta: { executionId: 'e-many', queryId: 7, parameters: { day: '2024-01-01' }, totalRowCount: 1000 } },
          resolved(output(target, { max_rows_per_file: 300 })),
        );
        const { names, dir } = await target.visible();
        const parts = [0, 1, 2, 3].map((i) => `part-0000${i}-e-many.${f.extension}`);
        expect(names).toEqual(['_SUCCESS', '_manifest.json', ...parts]);
        const manifest = JSON.parse(await readFile(join(dir, '_manifest.json'), 'utf8'));
        expect(manifest).toMatchObject({ execution_id: 'e-many', query_id: 7, parameters: { day: '2024-01-01' }, total_rows: 1000 });
        expect(manifest.files.map((x: { rows: number }) => x.rows)).toEqual([300, 300, 300, 100]);
        for (const file of manifest.files) {
          const bytes = await readFile(join(dir, file.path));
          expect(bytes.byteLength).toBe(file.bytes);
          expect(createHash('sha256').update(bytes).digest('hex')).toBe(file.sha256);
        }
        expect(summary.files.map((x) => x.path)).toEqual(parts);
        const back = await readBack(readerFormat, parts.map((p) => join(dir, p)), numberedSchema, readerFormat === 'arrow' ? undefined : 'id');
        const ids = back.id!.map((v) => BigInt(v!));
        expect(ids).toHaveLength(1000);
        expect(ids[0]).toBe(9007199254740000n);
        expect(ids[999]).toBe(9007199254740999n);
      });

      it('leaves nothing visible when aborted in the middle', async () => {
        const target = await destination.fresh();
        const controller = new AbortController();
        const run = writeExport(
          { schema: numberedSchema, batches: abortAfter(numbered(2000, 50), 5, controller), meta: { executionId: 'e-abort' } },
          resolved(output(target, { max_rows_per_file: 120 })),
          { signal: controller.signal },
        );
        await expect(run).rejects.toThrow('stop requested');
        expect((await target.visible()).names).toEqual([]);
        expect(await target.leftovers()).toEqual([]);
      });

      it('propagates an error from the source and commits nothing', async () => {
        const target = await destination.fresh();
        const run = writeExport({ schema: numberedSchema, batches: numbered(1000, 50, 500), meta: { executionId: 'e-fail' } }, resolved(output(target, { max_rows_per_file: 120 })));
        await expect(run).rejects.toThrow('source failed at row 500');
        expect((await target.visible()).names).toEqual([]);
        expect(await target.leftovers()).toEqual([]);
      });

      it('appends a run to the committed output: the parts of both runs under one manifest; a failed append leaves the committed set', async () => {
        const target = await destination.fresh();
        const append = (executionId: string, rows: number, failAt?: number) =>
          writeExport({ schema: numberedSchema, batches: numbered(rows, 50, failAt), meta: { executionId } }, resolved(output(target, { mode: 'append', max_rows_per_file: 100 })));
        await append('e-one', 150);
        await append('e-two', 100);
        const { names, dir } = await target.visible();
        const parts = [`part-00000-e-one.${f.extension}`, `part-00000-e-two.${f.extension}`, `part-00001-e-one.${f.extension}`];
        expect(names).toEqual(['_SUCCESS', '_manifest.json', ...parts]);
        const manifest = JSON.parse(await readFile(join(dir, '_manifest.json'), 'utf8'));
        expect(manifest).toMatchObject({ execution_id: 'e-two', mode: 'append', total_rows: 250 });
        expect(manifest.files.map((x: { path: string }) => x.path)).toEqual([parts[0], parts[2], parts[1]]);
        const back = await readBack(readerFormat, parts.map((p) => join(dir, p)), numberedSchema);
        expect(back.id).toHaveLength(250);
        await expect(append('e-broken', 300, 100)).rejects.toThrow('source failed at row 100');
        expect((await target.visible()).names).toEqual(names);
        expect(await target.leftovers()).toEqual([]);
      });

      it('replaces the previous output on a re-run, with no duplicates or leftovers', async () => {
        const target = await destination.fresh();
        await writeExport({ schema: numberedSchema, batches: numbered(300, 50), meta: { executionId: 'e-first' } }, resolved(output(target, { max_rows_per_file: 100 })));
        expect(dataFiles((await target.visible()).names)).toHaveLength(3);
        // A failed re-run must leave the first output intact.
        await expect(
          writeExport({ schema: numberedSchema, batches: numbered(300, 50, 100), meta: { executionId: 'e-broken' } }, resolved(output(target, { max_rows_per_file: 100 }))),
        ).rejects.toThrow('source failed');
        expect(dataFiles((await target.visible()).names)).toEqual([0, 1, 2].map((i) => `part-0000${i}-e-first.${f.extension}`));
        await writeExport({ schema: numberedSchema, batches: numbered(150, 50), meta: { executionId: 'e-second' } }, resolved(output(target, { max_rows_per_file: 100 })));
        const { names, dir } = await target.visible();
        expect(names).toEqual(['_SUCCESS', '_manifest.json', `part-00000-e-second.${f.extension}`, `part-00001-e-second.${f.extension}`]);
        const manifest = JSON.parse(await readFile(join(dir, '_manifest.json'), 'utf8'));
        expect(manifest.execution_id).toBe('e-second');
        expect(manifest.total_rows).toBe(150);
        expect(await target.leftovers()).toEqual([]);
      });
    });
  }
}

function mapValues<T, U>(record: Record<string, T>, fn: (v: T) => U): Record<string, U> {
  return Object.fromEntries(Object.entries(record).map(([k, v]) => [k, fn(v)]));
}
