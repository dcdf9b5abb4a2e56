import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtins } from '../../connectors/index.ts';
import { commitShards, type Destination, type Manifest, openDestination, type OutputConfig, type SharedArea } from '../../src/export/index.ts';
import { PreconditionFailedError } from '../../src/kit/index.ts';
import { resolved } from '../connectors/fixtures.ts';
import { startPreconditionGate, type PreconditionGate } from '../helpers/preconditionGate.ts';
import { startLocalS3, type LocalS3 } from '../helpers/s3.ts';
import { startAzurite, type LocalAzure } from '../helpers/azurite.ts';
import { startLocalGcs, type LocalGcs } from '../helpers/gcs.ts';

// The one commit of a sharded export, raced: two committers of the same export (every shard may find
// all records present at once), and two different exports committing to one place. The local S3
// server does not enforce conditional writes, so S3 goes through the precondition gate; azurite
// enforces them itself.

let s3: LocalS3;
let gate: PreconditionGate;
let azure: LocalAzure;
let gcs: LocalGcs;
let parent: string;
beforeAll(async () => {
  [s3, azure, gcs] = await Promise.all([startLocalS3(), startAzurite(), startLocalGcs()]);
  await Promise.all([s3.createBucket('shards'), azure.createContainer('shards'), gcs.createBucket('shards')]);
  gate = await startPreconditionGate(s3.endpoint);
  parent = await mkdtemp(join(tmpdir(), 'sluice-shard-commit-'));
}, 60_000);
afterAll(async () => {
  await gate?.stop();
  expect(gcs?.violations).toEqual([]);
  await Promise.all([s3?.stop(), azure?.stop(), gcs?.stop()]);
  await rm(parent, { recursive: true, force: true });
});

const places: Record<string, (name: string) => OutputConfig> = {
  file: (name) => ({ format: 'csv', path: join(parent, name) }),
  s3: (name) => ({ format: 'csv', path: `s3://shards/${name}`, s3: { endpoint: gate.endpoint, region: s3.region, force_path_style: true } }),
  azure: (name) => ({ format: 'csv', path: `azure://shards/${name}`, azure: azure.options }),
  gs: (name) => ({ format: 'csv', path: `gs://shards/${name}`, gcs: gcs.options }),
};

/** A fresh destination object, as another process would have. */
function open(config: OutputConfig): Destination {
  return openDestination(resolved(config, builtins));
}

/** Writes the parts of one export into `area` (as its shards would) and returns its manifest. */
async function staged(area: SharedArea, executionId: string, rows: number[]): Promise<Manifest> {
  const files = [];
  for (const [k, n] of rows.entries()) {
    const path = `part-${String(k).padStart(5, '0')}-${executionId}.csv`;
    const body = new TextEncoder().encode(`x\n${Array.from({ length: n }, (_, i) => String(k * 100 + i)).join('\n')}\n`);
    await area.write(path, (async function* () { yield body; })());
    files.push({ path, rows: n, bytes: body.byteLength, sha256: 'unchecked', partition: {} });
  }
  return {
    version: 1, execution_id: executionId, query_id: null, parameters: null, ended_at: null, fingerprint: 'fp', written_at: new Date().toISOString(),
    job: 'shards', mode: 'replace', incremental: null, format: 'csv', partition_by: [], total_rows: rows.reduce((a, b) => a + b, 0), total_bytes: files.reduce((n, f) => n + f.bytes, 0), files,
    schema: { fields: [], metadata: {} }, shards: { run_id: executionId, count: rows.length },
  };
}

/** The object names under the output's prefix, read with the store's own client. */
async function committedFiles(config: OutputConfig, kind: string): Promise<string[]> {
  if (kind === 'file') return (await readdir(config.path)).sort();
  const prefix = `${config.path.slice(`${kind}://shards/`.length)}/`;
  const keys = kind === 's3' ? await s3.list('shards', prefix) : kind === 'gs' ? await gcs.list('shards', prefix) : await azure.list('shards', prefix);
  return keys.map((k) => k.slice(prefix.length)).filter((k) => !k.startsWith('.sluice-shards/')).sort();
}

async function manifestOf(config: OutputConfig, kind: string): Promise<Manifest> {
  const key = `${config.path.slice(`${kind}://shards/`.length)}/_manifest.json`;
  const body = kind === 'file' ? await readFile(join(config.path, '_manifest.json')) : kind === 's3' ? await s3.get('shards', key) : kind === 'gs' ? await gcs.get('shards', key) : await azure.get('shards', key);
  return JSON.parse(new TextDecoder().decode(body)) as Manifest;
}

describe.each(Object.keys(places))('sharded commit on %s', (kind) => {
  // Either committer may win: the one whose process wrote the parts, or another, while the writer's
  // lease (live: its process runs) is still at the output. Each then tidies up as the shard runner
  // does (`area.remove`: the records and every writer's lease go), and only the committed output is left.
  it.each([
    ['race', false],
    ['the committer that wrote no part goes first', true],
  ])('two committers of the same export (%s): one publishes, the other finds it committed and removes nothing', async (_, otherFirst) => {
    const config = places[kind]!(`same-${kind}-${otherFirst ? 'other' : 'race'}`);
    const [a, b] = [open(config), open(config)];
    const [areaA, areaB] = [a.shared!('run-same'), b.shared!('run-same')];
    const manifest = await staged(areaA, 'EXEC1', [3, 3, 2]);
    const commit = (d: Destination, area: SharedArea) => commitShards(d, area, manifest, null, 'conditional');
    const outcomes = otherFirst ? [await commit(b, areaB), await commit(a, areaA)] : await Promise.all([commit(a, areaA), commit(b, areaB)]);
    expect(outcomes.sort()).toEqual(['committed', 'committed-by-another']);
    await Promise.all([areaA.remove(), areaB.remove()]);
    expect(await committedFiles(config, kind)).toEqual(['_SUCCESS', '_manifest.json', ...manifest.files.map((f) => f.path)].sort());
    expect((await manifestOf(config, kind)).execution_id).toBe('EXEC1');
    await Promise.all([a.close(), b.close()]);
  });

  it('two different exports race for one place: exactly one wins, the loser fails with PRECONDITION_FAILED and deletes nothing', async () => {
    const config = places[kind]!(`other-${kind}`);
    const [a, b] = [open(config), open(config)];
    const first = await staged(a.shared!('run-a'), 'EXECA', [2, 2]);
    const second = await staged(b.shared!('run-b'), 'EXECB', [3]);
    const settled = await Promise.allSettled([commitShards(a, a.shared!('run-a'), first, null, 'conditional'), commitShards(b, b.shared!('run-b'), second, null, 'conditional')]);
    const won = settled.filter((s) => s.status === 'fulfilled');
    const lost = settled.filter((s) => s.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect((lost[0] as PromiseRejectedResult).reason).toBeInstanceOf(PreconditionFailedError);
    expect((lost[0] as PromiseRejectedResult).reason.code).toBe('PRECONDITION_FAILED');
    const winner = await manifestOf(config, kind);
    const expected = winner.execution_id === 'EXECA' ? first : second;
    const listed = ['_SUCCESS', '_manifest.json', ...expected.files.map((f) => f.path)];
    expect(await committedFiles(config, kind)).toEqual(expect.arrayContaining(listed));
    await Promise.all([a.close(), b.close()]);
    // The loser's parts stay while it runs; the next sweep, with no writer alive, takes them.
    const next = open(config);
    await next.sweep!(async () => listed);
    await next.close();
    expect(await committedFiles(config, kind)).toEqual(listed.sort());
  });

  it('a plan made against one committed output does not replace another that was committed since', async () => {
    const config = places[kind]!(`moved-${kind}`);
    const a = open(config);
    const old = await staged(a.shared!('run-old'), 'EXECOLD', [1]);
    expect(await commitShards(a, a.shared!('run-old'), old, null, 'conditional')).toBe('committed');
    // The plan of a new run expected the place to be empty (replaces: null): the commit refuses.
    const next = await staged(a.shared!('run-new'), 'EXECNEW', [2]);
    await expect(commitShards(a, a.shared!('run-new'), next, null, 'conditional')).rejects.toThrow(/the output changed since the plan was made \(it holds execution EXECOLD now, the plan expected nothing\)/);
    expect((await manifestOf(config, kind)).execution_id).toBe('EXECOLD');
    // Unconditional (stores without conditional writes): the last writer wins.
    expect(await commitShards(a, a.shared!('run-new'), next, null, 'unconditional')).toBe('committed');
    expect((await manifestOf(config, kind)).execution_id).toBe('EXECNEW');
    expect(await committedFiles(config, kind)).toEqual(['_SUCCESS', '_manifest.json', ...next.files.map((f) => f.path)].sort());
    await a.close();
  });
});
