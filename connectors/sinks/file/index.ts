import { constants } from 'node:fs';
import { access, readdir, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { defineSink, DestinationCheckError, type ObjectStore } from '../../../src/kit/index.ts';
import { folderStore, makeFolder } from './folderStore.ts';
import { folderLink } from './link.ts';
import { isCode } from './lock.ts';

/**
 * A file:// URL or a path without any scheme: `s3://...`, `gs://...` and slips such as `s3:/x` belong
 * to other sinks or to none, never to a local directory named `s3:`. A one-letter "scheme" is a
 * drive (`C:\out`).
 */
function isLocal(url: string): boolean {
  return url.startsWith('file://') || !/^[a-z][a-z0-9+.-]+:/i.test(url);
}

export const fileConfig = z.strictObject({
  url: z
    .string()
    .min(1)
    .refine(isLocal, 'expected a local directory path or a file:// URL')
    .describe('Directory the export owns: a local path or a file:// URL. Created when missing.'),
});
export type FileConfig = z.output<typeof fileConfig>;

/**
 * A local folder. The output path is a symbolic link to the folder of its current commit, kept in
 * `.<name>.sluice/` beside it; a commit writes a new folder there and renames a new link over the
 * output path, so a reader listing the folder, as one reading the manifest, sees the old output or
 * the new one (docs/running-jobs.md, "What a reader sees"). The commit itself is written once over this store in
 * src/export.
 */
export const file = defineSink({
  type: 'file',
  description: 'Local folder: each commit a folder of its own, the output path a link swapped to it in one step.',
  paths: 'a local directory or file:// URL',
  config: fileConfig,
  accepts: (url) => url !== '-' && isLocal(url),
  create: (config: FileConfig) => fileStore(config.url.startsWith('file://') ? fileURLToPath(config.url) : config.url),
});

/** The output folder `path` as an object store with a link (see `folderLink`). */
export function fileStore(path: string): ObjectStore {
  const target = resolve(path);
  const areaPath = join(dirname(target), `.${basename(target)}.sluice`);
  const output = folderStore(target);
  return {
    ...output,
    link: folderLink(target, folderStore(areaPath, { emptyFolders: true }), areaPath),
    check: (_signal, options = {}) => checkWritable(target, output.url, options.records ?? MANIFEST_RECORDS),
  };
}

/** The records of the manifest commit: a folder holding one of them was written by sluice. */
const MANIFEST_RECORDS = ['_manifest.json', '_SUCCESS'];

/**
 * Before anything is spent: the output folder is a folder, holds nothing sluice did not write (a
 * committed export has its markers), and it or its nearest existing parent can be written.
 */
async function checkWritable(target: string, url: string, records: readonly string[]): Promise<void> {
  const found = await stat(target).catch(() => undefined);
  if (found !== undefined && !found.isDirectory()) throw new DestinationCheckError(url, `${target} is a file, not a folder; point the export at a folder`);
  if (found !== undefined) {
    const entries = await readdir(target).catch((error: unknown): string[] => {
      if (isCode(error, 'ENOENT')) return [];
      throw error;
    });
    const marked = records.some((r) => entries.includes(r.split('/')[0]!));
    if (entries.length > 0 && !marked) {
      throw new DestinationCheckError(url, `the folder holds files sluice did not write (${entries.slice(0, 5).join(', ')}${entries.length > 5 ? ', ...' : ''}); point the export at an empty or sluice-owned folder`);
    }
  }
  // The folder it goes in is made now, one level at a time: a place where no folder can be made
  // (under /proc, a file on the way, no permission) fails here, before anything is paid for.
  const parent = dirname(target);
  try {
    await makeFolder(parent);
    await access(parent, constants.W_OK);
  } catch (error) {
    const { code = 'EACCES', path = parent } = error as NodeJS.ErrnoException;
    if (code === 'ENOTDIR') throw new DestinationCheckError(url, `${path} is a file, so no folder can be made under it; point the export at a folder`, error);
    const why = code === 'ENOENT' ? 'this file system does not allow it' : code;
    throw new DestinationCheckError(url, `cannot make or write the folder ${parent} (${why}); point the export at a folder you can write`, error);
  }
}
