import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commitFor, manifestCommit, openExport, type OutputConfig, unconditionalManifestCommit, writeExport } from '../../src/export/index.ts';
import { PreconditionFailedError } from '../../src/kit/index.ts';
import { numbered, numberedSchema, resolved } from '../connectors/fixtures.ts';
import { startPreconditionGate, type PreconditionGate } from '../helpers/preconditionGate.ts';
import { startLocalS3, type LocalS3 } from '../helpers/s3.ts';

// `commit: unconditional` is for object stores that ignore If-None-Match / If-Match: the manifest is
// put whatever is there. Shown against S3 with the gate enforcing conditions, where the conditional
// commit refuses to replace a manifest that changed since it was read and the unconditional one does.

let s3: LocalS3;
let gate: PreconditionGate;
beforeAll(async () => {
  s3 = await startLocalS3();
  await s3.createBucket('lww');
  gate = await startPreconditionGate(s3.endpoint);
});
afterAll(async () => {
  await gate?.stop();
  await s3?.stop();
});

const output = (prefix: string): OutputConfig => ({ format: 'csv', path: `s3://lww/${prefix}`, s3: { endpoint: gate.endpoint, region: s3.region, force_path_style: true } });

async function manifestExecution(prefix: string): Promise<string> {
  return (JSON.parse(new TextDecoder().decode(await s3.get('lww', `${prefix}/_manifest.json`))) as { execution_id: string }).execution_id;
}

describe('commit: unconditional', () => {
  it.each([
    ['conditional', 'e1', manifestCommit],
    ['unconditional', 'e2', unconditionalManifestCommit],
  ] as const)('%s: an export that read the committed output before another run replaced it leaves the manifest of %s', async (mode, expected, commit) => {
    const prefix = `case-${mode}`;
    const out = resolved(output(prefix));
    await writeExport({ schema: numberedSchema, batches: numbered(10, 10), meta: { executionId: 'e0', totalRowCount: 10 } }, out);
    // e2 reads the commit (e0), then e1 replaces it, then e2 publishes.
    const late = await openExport(out, { executionId: 'e2' }, { commit });
    await writeExport({ schema: numberedSchema, batches: numbered(20, 10), meta: { executionId: 'e1', totalRowCount: 20 } }, out);
    const publishing = late.write({ schema: numberedSchema, batches: numbered(30, 10), meta: { executionId: 'e2', totalRowCount: 30 } });
    if (mode === 'conditional') await expect(publishing).rejects.toBeInstanceOf(PreconditionFailedError);
    else await expect(publishing).resolves.toMatchObject({ rows: 30 });
    expect(await manifestExecution(prefix)).toBe(expected);
  });

  it('is the commit a manifest output gets with commit: unconditional, and is refused for an Iceberg table', () => {
    expect(commitFor(resolved({ ...output('x'), commit: 'unconditional' }))).toBe(unconditionalManifestCommit);
    expect(commitFor(resolved(output('x')))).toBe(manifestCommit);
    expect(() => resolved({ format: 'parquet', path: 's3://lww/t', table: 'iceberg', commit: 'unconditional', s3: { endpoint: gate.endpoint, region: s3.region, force_path_style: true } })).toThrow(
      /commit: an Iceberg table is committed by creating its next metadata file only if absent: drop commit: unconditional/,
    );
  });
});
