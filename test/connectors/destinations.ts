import { mkdtemp, readdir, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import type { LocalS3 } from '../helpers/s3.ts';
import type { LocalAzure } from '../helpers/azurite.ts';
import type { LocalGcs } from '../helpers/gcs.ts';
import { file } from '../../connectors/sinks/file/index.ts';
import type { ObjectStore } from '../../src/kit/index.ts';

/** A place an export can go in a test, and a way to see what a reader would see there. */
export interface TestDestination {
  readonly kind: 'file' | 's3' | 'azure' | 'gcs';
  /** A fresh, unused export location. */
  fresh(): Promise<TestTarget>;
}

export interface TestTarget {
  /** `output` fields for writeExport: path (and s3, azure or gcs settings). */
  readonly output: { path: string; s3?: Record<string, unknown>; azure?: Record<string, unknown>; gcs?: Record<string, unknown> };
  /** Everything visible at the location, as local files: relative names and a local directory. */
  visible(): Promise<{ names: string[]; dir: string }>;
  /** Everything left behind next to the location (staging directories, stray objects). */
  leftovers(): Promise<string[]>;
}

const scratch: string[] = [];

export async function cleanupScratch(): Promise<void> {
  await Promise.all(scratch.splice(0).map((d) => rm(d, { recursive: true, force: true })));
}

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-sink-'));
  scratch.push(dir);
  return dir;
}

export async function listFiles(dir: string): Promise<string[]> {
  try {
    const entries = await readdir(dir, { recursive: true, withFileTypes: true });
    return entries
      .filter((e) => e.isFile())
      .map((e) => relative(dir, join(e.parentPath, e.name)).split('\\').join('/'))
      .sort();
  } catch (error) {
    if ((error as { code?: string }).code === 'ENOENT') return [];
    throw error;
  }
}

export function fileDestinationForTests(): TestDestination {
  return {
    kind: 'file',
    async fresh() {
      const parent = await tempDir();
      const path = join(parent, 'out');
      return {
        output: { path },
        visible: async () => ({ names: await listFiles(path), dir: path }),
        leftovers: () => fileLeftovers(parent, 'out'),
      };
    },
  };
}

/**
 * What is left beside the local output `name` in `parent` besides the output: other entries, and in
 * the private area `.<name>.sluice/` anything but the folder the output links to and one whole
 * earlier commit (the output the last commit replaced, kept for readers until the next sweep).
 */
export async function fileLeftovers(parent: string, name: string): Promise<string[]> {
  const area = `.${name}.sluice`;
  const beside = (await readdir(parent)).filter((n) => n !== name && n !== area);
  const current = await readlink(join(parent, name)).then((to) => to.slice(area.length + 1), () => undefined);
  // `.sluice-replaced-<id>`: when the spared commit stopped being the output.
  const inArea = (await listFiles(join(parent, area))).filter((n) => (current === undefined || !n.startsWith(`${current}/`)) && !n.startsWith('.sluice-replaced-'));
  const replaced = inArea.filter((n) => n.endsWith('/_manifest.json')).map((n) => n.slice(0, -'_manifest.json'.length));
  const spared = replaced.length === 1 ? replaced[0]! : undefined;
  return [...beside, ...inArea.filter((n) => spared === undefined || !n.startsWith(spared)).map((n) => `${area}/${n}`)];
}

let counter = 0;

export function s3DestinationForTests(s3: () => LocalS3, bucket: string): TestDestination {
  return {
    kind: 's3',
    async fresh() {
      const prefix = `exports/t${++counter}`;
      const output = { path: `s3://${bucket}/${prefix}`, s3: { endpoint: s3().endpoint, region: s3().region } };
      return {
        output,
        async visible() {
          const dir = await tempDir();
          const names = await s3().download(bucket, prefix, dir);
          return { names: names.sort(), dir };
        },
        leftovers: async () => (await s3().list(bucket, `exports/t${counter}`)).filter((k) => !k.startsWith(`${prefix}/`)),
      };
    },
  };
}

/**
 * The file sink, counting the streams being written at once (the most seen in `counter.most`): a
 * stream is a put of a body that is not held in memory, into the output's private area.
 */
export function countingFileSink(counter: { writing: number; most: number }): typeof file {
  const count = (store: ObjectStore): ObjectStore => ({
    ...store,
    async put(name, body, options) {
      if (body instanceof Uint8Array) return store.put(name, body, options);
      counter.most = Math.max(counter.most, ++counter.writing);
      try {
        return await store.put(name, body, options);
      } finally {
        counter.writing -= 1;
      }
    },
  });
  return {
    ...file,
    create: (config) => {
      const store = file.create(config);
      return { ...count(store), link: store.link && { ...store.link, area: count(store.link.area) } };
    },
  };
}

export function azureDestinationForTests(azure: () => LocalAzure, container: string): TestDestination {
  return {
    kind: 'azure',
    async fresh() {
      const prefix = `exports/a${++counter}`;
      const output = { path: `azure://${container}/${prefix}`, azure: azure().options };
      return {
        output,
        async visible() {
          const dir = await tempDir();
          const names = await azure().download(container, prefix, dir);
          return { names: names.sort(), dir };
        },
        leftovers: async () => (await azure().list(container, `exports/a${counter}`)).filter((k) => !k.startsWith(`${prefix}/`)),
      };
    },
  };
}

export function gcsDestinationForTests(gcs: () => LocalGcs, bucket: string): TestDestination {
  return {
    kind: 'gcs',
    async fresh() {
      const prefix = `exports/g${++counter}`;
      const output = { path: `gs://${bucket}/${prefix}`, gcs: gcs().options };
      return {
        output,
        async visible() {
          const dir = await tempDir();
          const names = await gcs().download(bucket, prefix, dir);
          return { names: names.sort(), dir };
        },
        leftovers: async () => (await gcs().list(bucket, `exports/g${counter}`)).filter((k) => !k.startsWith(`${prefix}/`)),
      };
    },
  };
}
