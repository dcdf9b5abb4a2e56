import type { TableLayout } from '../destination.ts';
import { decodeAvroFile } from './avro.ts';
import type { TablePointer, TableStorage } from './storage.ts';
import { type LoadedTable, readManifestList } from './writeIcebergTable.ts';

/** Where an Iceberg table keeps its data files, relative to its location. */
const DATA = 'data/';

/** A data file sluice wrote: `data/[col=value/...]part-NNNNN-<name>-<token>.<ext>`. */
const DATA_FILE = /^data\/(?:[^/]+=[^/]*\/)*part-\d{5,}-[^/]*-([0-9a-f]{8})\.[A-Za-z0-9]+$/;

/**
 * An Iceberg table as the generic transaction stores it: each data file under `data/`, named
 * `<part name>-<token>.<ext>` (the token new for every attempt, so no file of an earlier snapshot
 * is ever replaced), and the committed table read through its pointer (its metadata file, or its
 * catalog) for the sweep. `storage` is called when needed: a catalog's vended credentials may
 * reopen the destination between calls.
 */
export function tableLayout(storage: () => TableStorage, pointer: TablePointer): TableLayout {
  return {
    prefix: DATA,
    located: (name, token) => `${DATA}${name.replace(/(\.[A-Za-z0-9]+)?$/, (ext) => `-${token}${ext}`)}`,
    tokenOf: (stored) => DATA_FILE.exec(stored)?.[1],
    async committed(signal) {
      const base = await pointer.load(signal);
      return { key: base.file, references: () => referencedFiles(storage(), base) };
    },
  };
}

/**
 * Every data file some snapshot of `base` references (relative to the table), from all its
 * snapshots' manifest lists and their manifests; undefined when one of them cannot be read or lies
 * outside the table, so that nothing is taken for unreferenced on a guess.
 */
async function referencedFiles(storage: TableStorage, base: LoadedTable): Promise<Set<string> | undefined> {
  const prefix = `${storage.url}/`;
  const manifests = new Set<string>();
  const files = new Set<string>();
  try {
    for (const snapshot of base.metadata?.snapshots ?? []) {
      for (const manifest of await readManifestList(storage, snapshot['manifest-list'], storage.url)) manifests.add(manifest.manifest_path);
    }
    for (const path of manifests) {
      const bytes = path.startsWith(prefix) ? await storage.read(path.slice(prefix.length)) : undefined;
      if (bytes === undefined) return undefined;
      for (const entry of await decodeAvroFile(bytes)) {
        const file = (entry.data_file as { file_path: string }).file_path;
        files.add(file.startsWith(prefix) ? file.slice(prefix.length) : file);
      }
    }
  } catch {
    return undefined;
  }
  return files;
}
