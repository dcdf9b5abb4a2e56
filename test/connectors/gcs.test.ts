import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gcs } from '../../connectors/index.ts';
import { ConfigError, DestinationCheckError, type ObjectStore, PreconditionFailedError } from '../../src/kit/index.ts';
import { startLocalGcs, type LocalGcs } from '../helpers/gcs.ts';

// The gcs sink's object store against the stand-in (Google's JSON API as its discovery document
// describes it): generation preconditions, resumable uploads, paging, and credentials from the
// standard chain (workload identity federation through an external_account file).

let open: LocalGcs;
let secured: LocalGcs;
let dir: string;
const stores: ObjectStore[] = [];

beforeAll(async () => {
  [open, secured] = await Promise.all([startLocalGcs(), startLocalGcs({ auth: true })]);
  await Promise.all([open.createBucket('lake'), secured.createBucket('lake')]);
  dir = await mkdtemp(join(tmpdir(), 'sluice-gcs-'));
});
afterAll(async () => {
  await Promise.all(stores.map((s) => s.close()));
  expect(open?.violations).toEqual([]);
  expect(secured?.violations).toEqual([]);
  await Promise.all([open?.stop(), secured?.stop()]);
  await rm(dir, { recursive: true, force: true });
});

function store(url: string, options: Record<string, unknown> = open.options): ObjectStore {
  const made = gcs.create(gcs.config.parse({ url, ...options })) as ObjectStore;
  stores.push(made);
  return made;
}

async function* pieces(total: number, size: number, fail?: Error): AsyncIterable<Uint8Array> {
  for (let sent = 0; sent < total; sent += size) {
    if (fail && sent >= total / 2) throw fail;
    yield new Uint8Array(Math.min(size, total - sent)).fill(sent % 251);
  }
}

describe('gcs object store', () => {
  it('creates only when absent (ifGenerationMatch=0) and replaces only the generation read', async () => {
    const s = store('gs://lake/conditions');
    const first = await s.put('_manifest.json', new TextEncoder().encode('one'), { condition: { ifAbsent: true } });
    await expect(s.put('_manifest.json', new TextEncoder().encode('two'), { condition: { ifAbsent: true } })).rejects.toBeInstanceOf(PreconditionFailedError);
    const second = await s.put('_manifest.json', new TextEncoder().encode('two'), { condition: { ifVersion: first.version } });
    expect(second.version).not.toBe(first.version);
    // The first generation is gone: a writer that read it lost the race.
    await expect(s.put('_manifest.json', new TextEncoder().encode('three'), { condition: { ifVersion: first.version } })).rejects.toBeInstanceOf(PreconditionFailedError);
    const got = await s.get('_manifest.json');
    expect(new TextDecoder().decode(got!.body)).toBe('two');
    expect(got!.version).toBe(second.version);
    expect(await s.head('_manifest.json')).toMatchObject({ size: 3, version: second.version });
    expect(await open.list('lake', 'conditions/')).toEqual(['conditions/_manifest.json']);
  });

  it('streams a body larger than a chunk as a resumable upload, one chunk in memory, visible only when finalised', async () => {
    const s = store('gs://lake/big', { ...open.options, chunk_size_mb: 1 });
    const before = open.counts.get('resumable.put') ?? 0;
    const total = 2.5 * 1024 * 1024 + 17;
    const out = await s.put('part-0.bin', pieces(total, 100_000), { contentType: 'application/octet-stream', condition: { ifAbsent: true } });
    expect(out.bytes).toBe(total);
    // Two full chunks and the last one: three PUTs to the session.
    expect((open.counts.get('resumable.put') ?? 0) - before).toBe(3);
    const back = await open.get('lake', 'big/part-0.bin');
    expect(back.byteLength).toBe(total);
    expect(back[0]).toBe(0);
    expect(back[total - 1]).toBe(Math.floor((total - 1) / 100_000) * 100_000 % 251);
    // Create-only holds at the end of a resumable upload too.
    await expect(s.put('part-0.bin', pieces(total, 100_000), { condition: { ifAbsent: true } })).rejects.toBeInstanceOf(PreconditionFailedError);
  });

  it('cancels the upload of a stream that fails halfway: nothing of it is visible', async () => {
    const s = store('gs://lake/failed', { ...open.options, chunk_size_mb: 1 });
    const cancelled = open.counts.get('resumable.delete') ?? 0;
    await expect(s.put('part-0.bin', pieces(3 * 1024 * 1024, 256 * 1024, new Error('source broke')))).rejects.toThrow('source broke');
    expect((open.counts.get('resumable.delete') ?? 0) - cancelled).toBe(1);
    expect(await s.list('')).toEqual([]);
    expect(await s.get('part-0.bin')).toBeUndefined();
    expect(await s.head('part-0.bin')).toBeUndefined();
  });

  it('lists every name under the prefix across pages, and deletes them (missing ones are fine)', async () => {
    const s = store('gs://lake/many');
    const names = Array.from({ length: 1005 }, (_, i) => `day=1/part-${String(i).padStart(5, '0')}.csv`);
    for (let i = 0; i < names.length; i += 50) await Promise.all(names.slice(i, i + 50).map((n) => open.put('lake', `many/${n}`, 'x')));
    await open.put('lake', 'manyother/part.csv', 'x');
    const listed = await s.list('day=1/');
    expect(listed.sort()).toEqual(names);
    await s.delete([...names, 'day=1/never-there.csv']);
    expect(await s.list('')).toEqual([]);
    expect(await open.list('lake', 'manyother/')).toEqual(['manyother/part.csv']);
  });

  it('checks the bucket before a run: a missing bucket, refused credentials', async () => {
    await expect(store('gs://lake/ok').check!()).resolves.toBeUndefined();
    const missing = store('gs://no-such-bucket/p').check!();
    await expect(missing).rejects.toBeInstanceOf(DestinationCheckError);
    await expect(missing).rejects.toThrow('the bucket no-such-bucket does not exist');
    const refused = store('gs://lake/p', secured.options).check!();
    await expect(refused).rejects.toBeInstanceOf(ConfigError);
    await expect(refused).rejects.toThrow(/Google credentials were refused \(401\)/);
  });

  it('takes credentials from the standard chain: workload identity federation (external_account) exchanged for a token', async () => {
    const keyFile = await secured.externalAccount(dir);
    const s = store('gs://lake/wif', { endpoint: secured.endpoint, key_file: keyFile });
    await s.check!();
    await s.put('a.csv', new TextEncoder().encode('a\n1\n'), { condition: { ifAbsent: true } });
    expect(new TextDecoder().decode(await secured.get('lake', 'wif/a.csv'))).toBe('a\n1\n');
  });

  it('takes credentials from the standard chain: application default credentials, GOOGLE_APPLICATION_CREDENTIALS naming the file', async () => {
    const keyFile = await secured.externalAccount(dir);
    const saved = process.env.GOOGLE_APPLICATION_CREDENTIALS;
    process.env.GOOGLE_APPLICATION_CREDENTIALS = keyFile;
    try {
      const s = store('gs://lake/adc', { endpoint: secured.endpoint });
      await s.check!();
      await s.put('a.csv', new TextEncoder().encode('a\n3\n'), { condition: { ifAbsent: true } });
      expect(new TextDecoder().decode(await secured.get('lake', 'adc/a.csv'))).toBe('a\n3\n');
    } finally {
      if (saved === undefined) delete process.env.GOOGLE_APPLICATION_CREDENTIALS;
      else process.env.GOOGLE_APPLICATION_CREDENTIALS = saved;
    }
  });

  it('takes credentials from the standard chain: with nothing set, the metadata server of GKE, Cloud Run or GCE (workload identity)', async () => {
    const metadata = await secured.metadataServer();
    // No key file, no GOOGLE_APPLICATION_CREDENTIALS, no gcloud folder: what is left is the metadata server.
    const names = ['GOOGLE_APPLICATION_CREDENTIALS', 'GCE_METADATA_HOST', 'CLOUDSDK_CONFIG'] as const;
    const saved = names.map((n) => process.env[n]);
    delete process.env.GOOGLE_APPLICATION_CREDENTIALS;
    Object.assign(process.env, { GCE_METADATA_HOST: metadata.host, CLOUDSDK_CONFIG: join(dir, 'no-gcloud') });
    try {
      const s = store('gs://lake/metadata', { endpoint: secured.endpoint });
      await s.check!();
      await s.put('a.csv', new TextEncoder().encode('a\n2\n'), { condition: { ifAbsent: true } });
      expect(new TextDecoder().decode(await secured.get('lake', 'metadata/a.csv'))).toBe('a\n2\n');
      expect(metadata.scopes).toEqual(expect.arrayContaining(['https://www.googleapis.com/auth/devstorage.read_write']));
      // No project looked up: object calls need none (and the lookup costs seconds, or fails outright under workload identity federation).
      expect(metadata.asked).not.toContain('/computeMetadata/v1/project/project-id');
    } finally {
      names.forEach((n, i) => (saved[i] === undefined ? delete process.env[n] : (process.env[n] = saved[i])));
      await metadata.stop();
    }
  });

  it('names what to set when no credentials resolve', async () => {
    const s = store('gs://lake/p', { endpoint: open.endpoint, key_file: join(dir, 'missing.json') });
    const failed = s.check!();
    await expect(failed).rejects.toBeInstanceOf(ConfigError);
    await expect(failed).rejects.toThrow(/no Google credentials from the key file .*missing\.json.*GOOGLE_APPLICATION_CREDENTIALS/);
  });
});
