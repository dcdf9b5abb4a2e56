import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Commit, type CommitProtocol, writeExport } from '../../src/export/index.ts';
import { committedExport } from '../../src/jobs/output/committedOutput.ts';
import { PreconditionFailedError } from '../../src/kit/index.ts';
import { type Destination, openDestination } from '../../src/export/index.ts';
import { destinationStorage } from '../../src/export/iceberg/index.ts';
import { builtins } from '../../connectors/index.ts';
import type { OutputConfig } from '../../src/export/index.ts';
import { listFiles } from '../connectors/destinations.ts';
import { numbered, numberedSchema, resolved } from '../connectors/fixtures.ts';
import { startPreconditionGate, type PreconditionGate } from '../helpers/preconditionGate.ts';
import { startLocalS3, type LocalS3 } from '../helpers/s3.ts';
import { startAzurite, type LocalAzure } from '../helpers/azurite.ts';
import { startLocalGcs, type LocalGcs } from '../helpers/gcs.ts';
import { duckRowsJS as query } from '../helpers/duckdb.ts';
import { barrier } from '../helpers/barrier.ts';

const dirs: string[] = [];
async function outDir(): Promise<string> {
  const parent = await mkdtemp(join(tmpdir(), 'sluice-commit-'));
  dirs.push(parent);
  return join(parent, 'out');
}

let s3: LocalS3;
let gate: PreconditionGate;
let azure: LocalAzure;
let gcs: LocalGcs;
beforeAll(async () => {
  [s3, azure, gcs] = await Promise.all([startLocalS3(), startAzurite(), startLocalGcs()]);
  await Promise.all([s3.createBucket('commits'), azure.createContainer('commits'), gcs.createBucket('commits')]);
  gate = await startPreconditionGate(s3.endpoint);
}, 60_000);
afterAll(async () => {
  await gate?.stop();
  expect(gcs?.violations).toEqual([]);
  await Promise.all([s3?.stop(), azure?.stop(), gcs?.stop()]);
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

/**
 * A second commit protocol, written only against the kit and the commit interface: one text record
 * `_COMMIT.txt` (execution, fingerprint, rows, then one file per line), published create-only.
 */
const textCommit: CommitProtocol = {
  type: 'text',
  records: ['_COMMIT.txt'],
  async read(destination, signal) {
    const body = await destination.read('_COMMIT.txt', signal);
    if (body === undefined) return undefined;
    const [executionId, fingerprint, rows, ...files] = new TextDecoder().decode(body).trim().split('\n');
    return { executionId: executionId!, fingerprint: fingerprint === '-' ? null : fingerprint!, rows: Number(rows), bytes: 0, files, owns: [...files, '_COMMIT.txt'], version: undefined };
  },
  async publish(tx, content) {
    const files = content.files.map((f) => f.path);
    const text = [content.execution_id, content.fingerprint ?? '-', String(content.total_rows), ...files].join('\n');
    await tx.commit([{ name: '_COMMIT.txt', body: new TextEncoder().encode(`${text}\n`) }]);
    return { executionId: content.execution_id, fingerprint: content.fingerprint, rows: content.total_rows, bytes: content.total_bytes, files, owns: [...files, '_COMMIT.txt'], version: undefined } satisfies Commit;
  },
};

describe('commit protocol seam', () => {
  it('a second commit implementation plugs in without touching writeExport: its record, its skip check, its cleanup', async () => {
    const path = await outDir();
    const output = resolved({ format: 'csv', path, max_rows_per_file: 40 });
    const first = await writeExport({ schema: numberedSchema, batches: numbered(100, 25), meta: { executionId: 'e1', totalRowCount: 100, fingerprint: 'f' } }, output, { commit: textCommit });
    expect(first.files.map((f) => f.path)).toEqual(['part-00000-e1.csv', 'part-00001-e1.csv', 'part-00002-e1.csv']);
    expect(await listFiles(path)).toEqual(['_COMMIT.txt', 'part-00000-e1.csv', 'part-00001-e1.csv', 'part-00002-e1.csv']);
    expect(await readFile(join(path, '_COMMIT.txt'), 'utf8')).toBe('e1\nf\n100\npart-00000-e1.csv\npart-00001-e1.csv\npart-00002-e1.csv\n');

    // The skip check of the job runner reads through the same protocol.
    const signal = new AbortController().signal;
    expect(await committedExport(output, 'e1', 100, 'f', signal, textCommit)).toMatchObject({ rows: 100, files: 3 });
    expect(await committedExport(output, 'e1', 100, 'other', signal, textCommit)).toBeUndefined();
    expect(await committedExport(output, 'e1', 100, 'f', signal)).toBeUndefined(); // no manifest there

    // The next export replaces what the previous commit owns (and refuses nothing it owns as foreign).
    await writeExport({ schema: numberedSchema, batches: numbered(30, 30), meta: { executionId: 'e2', totalRowCount: 30 } }, output, { commit: textCommit });
    expect(await listFiles(path)).toEqual(['_COMMIT.txt', 'part-00000-e2.csv']);
    expect(await query(`SELECT count(*)::INTEGER AS n FROM read_csv('${path}/*.csv')`)).toEqual([{ n: 30 }]);
  });
});


const s3Output = (prefix: string): OutputConfig => ({ format: 'csv', path: `s3://commits/${prefix}`, s3: { endpoint: gate.endpoint, region: s3.region, force_path_style: true } });

function destinationOf(output: OutputConfig): Destination {
  return openDestination(resolved(output, builtins));
}

describe.each([
  ['file', async (): Promise<OutputConfig> => ({ format: 'csv', path: await outDir() }), async (o: { path: string }) => listFiles(o.path)],
  [
    's3 (through the precondition gate)',
    async () => s3Output(`race${Math.random().toString(36).slice(2, 8)}`),
    async (o: { path: string }) => {
      const prefix = o.path.slice('s3://commits/'.length);
      return (await s3.list('commits', `${prefix}/`)).map((k) => k.slice(prefix.length + 1));
    },
  ],
  [
    'azure',
    async (): Promise<OutputConfig> => ({ format: 'csv', path: `azure://commits/race${Math.random().toString(36).slice(2, 8)}`, azure: azure.options }),
    async (o: { path: string }) => {
      const prefix = o.path.slice('azure://commits/'.length);
      return (await azure.list('commits', `${prefix}/`)).map((k) => k.slice(prefix.length + 1));
    },
  ],
  [
    'gcs',
    async (): Promise<OutputConfig> => ({ format: 'csv', path: `gs://commits/race${Math.random().toString(36).slice(2, 8)}`, gcs: gcs.options }),
    async (o: { path: string }) => {
      const prefix = o.path.slice('gs://commits/'.length);
      return (await gcs.list('commits', `${prefix}/`)).map((k) => k.slice(prefix.length + 1));
    },
  ],
] as const)('conditional publish on %s', (_name, makeOutput, list) => {
  it('two publishers creating one name: exactly one wins; two replacing one version: exactly one wins', async () => {
    const output = await makeOutput();
    const a = destinationOf(output);
    const b = destinationOf(output);
    try {
      const created = await Promise.allSettled([
        a.publish!('meta/v1.json', new TextEncoder().encode('{"by":"a"}'), { ifAbsent: true }),
        b.publish!('meta/v1.json', new TextEncoder().encode('{"by":"b"}'), { ifAbsent: true }),
      ]);
      expect(created.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      const lost = created.find((r) => r.status === 'rejected') as PromiseRejectedResult;
      expect(lost.reason).toBeInstanceOf(PreconditionFailedError);
      const winner = new TextDecoder().decode((await a.readVersioned!('meta/v1.json'))!.body);
      expect(winner).toBe(created[0]!.status === 'fulfilled' ? '{"by":"a"}' : '{"by":"b"}');

      const current = (await a.readVersioned!('meta/v1.json'))!;
      const replaced = await Promise.allSettled([
        a.publish!('meta/v1.json', new TextEncoder().encode('{"by":"a2"}'), { ifVersion: current.version }),
        b.publish!('meta/v1.json', new TextEncoder().encode('{"by":"b2"}'), { ifVersion: current.version }),
      ]);
      expect(replaced.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      expect((replaced.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason).toBeInstanceOf(PreconditionFailedError);
      // A stale version never replaces.
      await expect(a.publish!('meta/v1.json', new Uint8Array(), { ifVersion: current.version })).rejects.toBeInstanceOf(PreconditionFailedError);
      expect(await a.store!.list('meta/')).toEqual(['meta/v1.json']);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("a table's storage (a view of the store) puts a stream in place under its name, complete or not at all; delete takes it away again", async () => {
    const output = await makeOutput();
    const d = destinationOf(output);
    const view = destinationStorage(d);
    try {
      const chunks = async function* () {
        yield new TextEncoder().encode('a,b\n');
        yield new TextEncoder().encode('1,2\n');
      };
      expect(await view.put('data/k=1/part-0.csv', chunks())).toBe(8);
      expect(new TextDecoder().decode(await d.read('data/k=1/part-0.csv'))).toBe('a,b\n1,2\n');
      // A stream that fails leaves nothing under the name.
      const failing = async function* () {
        yield new TextEncoder().encode('half');
        throw new Error('source failed');
      };
      await expect(view.put('data/k=1/part-1.csv', failing())).rejects.toThrow();
      expect(await view.list('')).toEqual(['data/k=1/part-0.csv']);
      await view.delete(['data/k=1/part-0.csv', 'data/missing.csv']);
      expect(await view.list('')).toEqual([]);
      expect(await list(output)).toEqual([]);
    } finally {
      await d.close();
    }
  });

  it('two exports racing to commit at one place: exactly one wins, the loser leaves nothing behind', async () => {
    const output = await makeOutput();
    // A committed output first, so both racers replace the same version.
    await writeExport({ schema: numberedSchema, batches: numbered(10, 10), meta: { executionId: 'e0', totalRowCount: 10 } }, resolved(output));
    const gateOpen = barrier(2);
    const runs = await Promise.allSettled(
      ['ea', 'eb'].map((executionId) =>
        writeExport({ schema: numberedSchema, batches: gateOpen(numbered(50, 10)), meta: { executionId, totalRowCount: 50 } }, resolved({ ...output, max_rows_per_file: 20 })),
      ),
    );
    expect(runs.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const lost = runs.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    if (!(lost.reason instanceof PreconditionFailedError)) throw lost.reason;
    const won = (runs.find((r) => r.status === 'fulfilled') as PromiseFulfilledResult<Awaited<ReturnType<typeof writeExport>>>).value;
    const id = won.manifest!.execution_id;
    expect(await list(output as never)).toEqual(['_SUCCESS', '_manifest.json', `part-00000-${id}.csv`, `part-00001-${id}.csv`, `part-00002-${id}.csv`]);
  });
});
