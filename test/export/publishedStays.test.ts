// A commit that fails after its commit point (the manifest is published in place, `_SUCCESS` is not)
// is a commit: the export fails loudly, and nothing the published manifest lists is removed. The
// local S3 behind the precondition gate (which enforces the manifest's create-only put as S3 does).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { builtins } from '../../connectors/index.ts';
import { type ObjectStore } from '../../src/kit/index.ts';
import { manifestCommit, openDestination, type ResolvedOutput, writeExport } from '../../src/export/index.ts';
import { numbered, numberedSchema, resolved } from '../connectors/fixtures.ts';
import { startPreconditionGate, type PreconditionGate } from '../helpers/preconditionGate.ts';
import { startLocalS3, type LocalS3 } from '../helpers/s3.ts';

let s3: LocalS3;
let gate: PreconditionGate;
beforeAll(async () => {
  s3 = await startLocalS3();
  await s3.createBucket('out');
  gate = await startPreconditionGate(s3.endpoint);
});
afterAll(async () => {
  await gate?.stop();
  await s3?.stop();
});

/** The output with a store whose put of `name` fails (the store answered 500, say). */
function failingPut(output: ResolvedOutput, name: string): ResolvedOutput {
  const sink = output.sink;
  return {
    ...output,
    sink: {
      ...sink,
      create(config: never) {
        const store = sink.create(config) as ObjectStore;
        return { ...store, put: (n, body, options) => (n === name ? Promise.reject(new Error(`${name}: the store failed`)) : store.put(n, body, options)) };
      },
    },
  };
}

it('a failure after the manifest is published removes nothing it lists; the next look finishes the commit', async () => {
  const output = resolved({ format: 'csv', path: 's3://out/published', max_rows_per_file: 10, s3: { endpoint: gate.endpoint, region: s3.region, force_path_style: true } }, builtins);
  await expect(writeExport({ schema: numberedSchema, batches: numbered(30, 10), meta: { executionId: 'e1', totalRowCount: 30 } }, failingPut(output, '_SUCCESS'))).rejects.toThrow(/_SUCCESS/);
  const keys = (await s3.list('out', 'published/')).map((k) => k.slice('published/'.length));
  const destination = openDestination(output);
  try {
    const commit = (await manifestCommit.read(destination))!;
    expect(commit.executionId).toBe('e1');
    expect(commit.files).toHaveLength(3);
    for (const file of commit.files) expect(keys, file).toContain(file);
    expect(keys).not.toContain('_SUCCESS');
    await manifestCommit.finish!(destination, commit);
    expect(await s3.list('out', 'published/')).toContain('published/_SUCCESS');
  } finally {
    await destination.close();
  }
});
