import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import type { LocalS3 } from '../helpers/s3.ts';

/** A place an export can go in a test, and a way to see what a reader would see there. */
export interface TestDestination {
  readonly kind: 'file' | 's3';
  /** A fresh, unused export location. */
  fresh(): Promise<TestTarget>;
}

export interface TestTarget {
  /** `output` fields for writeExport: path (and s3 settings). */
  readonly output: { path: string; s3?: Record<string, unknown> };
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
        leftovers: async () => (await readdir(parent)).filter((n) => n !== 'out'),
      };
    },
  };
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
