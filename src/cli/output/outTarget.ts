import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { s3 as s3Sink, s3Config } from '../../../connectors/sinks/s3/index.ts';
import { parseS3Url } from '../../../connectors/sinks/s3/url.ts';
import { ConfigError, DestinationCheckError, DestinationError, type ObjectStore } from '../../kit/index.ts';
import { UsageError } from '../usageError.ts';

/**
 * Where `--out` writes: the destinations of a job output, for one file. `-` (or no --out) is
 * standard output, `s3://bucket/key` an S3 object, anything else (or a file:// URL) a local file.
 */
export type OutTarget =
  | { readonly kind: 'stdout' }
  | { readonly kind: 'file'; readonly path: string }
  | { readonly kind: 's3'; readonly url: string; readonly bucket: string; readonly key: string };

/** Parses `--out` without touching anything; a destination that can never work is a usage error. */
export function parseOut(out: string | undefined, cwd: string): OutTarget {
  if (out === undefined || out === '-') return { kind: 'stdout' };
  if (/^s3:/i.test(out)) {
    if (!out.startsWith('s3://')) throw new UsageError(`--out ${JSON.stringify(out)}: write S3 destinations as s3://bucket/key (lowercase s3, two slashes)`);
    const location = parseS3Url(out);
    if (location === undefined) {
      throw new UsageError(`--out ${JSON.stringify(out)}: not a valid S3 URL; the bucket name is 3-63 lowercase letters, digits, dots and hyphens (s3://bucket/key)`);
    }
    if (location.prefix === '' || out.endsWith('/')) throw new UsageError(`--out ${JSON.stringify(out)}: name the object to write, e.g. s3://${location.bucket}/rows.parquet`);
    return { kind: 's3', url: out, bucket: location.bucket, key: location.prefix };
  }
  if (out.startsWith('file://')) return { kind: 'file', path: fileURLToPath(out) };
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(out)?.[1];
  if (scheme !== undefined) throw new UsageError(`--out ${JSON.stringify(out)}: ${scheme}:// is not a destination sluice writes to; use a local path, file://, s3://bucket/key, or - for standard output`);
  return { kind: 'file', path: resolve(cwd, out) };
}

export const ROW_FORMATS = ['table', 'csv', 'ndjson', 'arrow', 'parquet'] as const;
export type RowFormat = (typeof ROW_FORMATS)[number];

/** A format and, for Arrow, the IPC container: `.arrow` files have a footer (file format), `.arrows` and pipes do not (stream). */
export interface ChosenFormat {
  readonly format: RowFormat;
  readonly arrowContainer: 'file' | 'stream';
}

const BY_EXTENSION: Readonly<Record<string, ChosenFormat>> = {
  csv: { format: 'csv', arrowContainer: 'stream' },
  ndjson: { format: 'ndjson', arrowContainer: 'stream' },
  jsonl: { format: 'ndjson', arrowContainer: 'stream' },
  parquet: { format: 'parquet', arrowContainer: 'stream' },
  arrow: { format: 'arrow', arrowContainer: 'file' },
  feather: { format: 'arrow', arrowContainer: 'file' },
  arrows: { format: 'arrow', arrowContainer: 'stream' },
};
const KNOWN = '.csv, .ndjson or .jsonl, .parquet, .arrow or .feather (Arrow IPC file), .arrows (Arrow IPC stream)';

/**
 * `--format` if given, else the destination's extension, else a table on a terminal and CSV in a
 * pipe. A file whose extension says nothing (or says .json, which readers take for one JSON
 * document, not the one object per line sluice writes) is refused rather than guessed.
 */
export function chooseFormat(given: string | undefined, target: OutTarget, stdoutIsTTY: boolean): ChosenFormat {
  const name = target.kind === 'file' ? basename(target.path) : target.kind === 's3' ? basename(target.key) : undefined;
  const ext = name?.match(/\.([a-z0-9]+)$/i)?.[1]?.toLowerCase();
  const fromExt = ext === undefined ? undefined : BY_EXTENSION[ext];
  if (given !== undefined) {
    if (!(ROW_FORMATS as readonly string[]).includes(given)) throw new UsageError(`--format must be one of ${ROW_FORMATS.join(', ')}, got ${JSON.stringify(given)}`);
    if (given === 'table' && target.kind !== 'stdout') throw new UsageError('--format table is for the terminal; with --out use csv, ndjson, arrow or parquet');
    return { format: given as RowFormat, arrowContainer: given === 'arrow' && fromExt?.format === 'arrow' ? fromExt.arrowContainer : 'stream' };
  }
  if (name === undefined) return { format: stdoutIsTTY ? 'table' : 'csv', arrowContainer: 'stream' };
  if (fromExt !== undefined) return fromExt;
  if (ext === 'json') {
    throw new UsageError(`--out ${name}: .json is read as one JSON document, but sluice writes one JSON object per line; name it .ndjson or .jsonl, or pass --format ndjson to keep the name`);
  }
  throw new UsageError(`--out ${name}: cannot tell the format from ${ext === undefined ? 'a name without an extension' : `the extension .${ext}`}; use ${KNOWN}, or pass --format`);
}

/** Options of the S3 object store `--out s3://...` writes through. */
export interface S3OutOptions {
  readonly endpoint?: string | undefined;
  readonly region?: string | undefined;
}

/** An opened destination: stores one byte stream under its final name at once, or not at all. */
export interface OpenedTarget {
  readonly target: OutTarget;
  /** Where the bytes go, for messages (`file:///...`, `s3://...`, `stdout`). */
  readonly url: string;
  readonly store?: ObjectStore;
  close(): void;
}

/**
 * Everything about the destination that can be known before the query is paid for: the folder
 * exists and is writable and the name is not a folder; S3 credentials resolve and the bucket
 * answers. Throws a DestinationError (or a ConfigError for S3 settings) that names `--out`.
 */
export async function openTarget(target: OutTarget, s3: S3OutOptions, signal: AbortSignal): Promise<OpenedTarget> {
  if (target.kind === 'stdout') return { target, url: 'stdout', close: () => undefined };
  if (target.kind === 'file') {
    const url = `file://${target.path}`;
    const folder = dirname(target.path);
    const folderStat = await stat(folder).catch(() => undefined);
    if (folderStat === undefined) throw refuse(url, `the folder ${folder} does not exist; create it first`);
    if (!folderStat.isDirectory()) throw refuse(url, `${folder} is not a folder`);
    if ((await stat(target.path).catch(() => undefined))?.isDirectory()) throw refuse(url, `${target.path} is a folder; name a file in it, e.g. ${target.path}/rows.parquet`);
    try {
      await access(folder, constants.W_OK);
    } catch (error) {
      throw refuse(url, `the folder ${folder} is not writable (${(error as NodeJS.ErrnoException).code ?? 'EACCES'})`);
    }
    return { target, url, close: () => undefined };
  }
  const parsed = s3Config.safeParse({ url: `s3://${target.bucket}`, ...(s3.endpoint ? { endpoint: s3.endpoint } : {}), ...(s3.region ? { region: s3.region } : {}) });
  if (!parsed.success) {
    throw new ConfigError('--out S3 settings', parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message, value: undefined })));
  }
  // The sink's store loads the AWS SDK with its first call: only an S3 destination needs it.
  const store = s3Sink.create(parsed.data);
  try {
    await store.check?.(signal);
  } catch (error) {
    await store.close();
    if (error instanceof ConfigError || error instanceof DestinationCheckError) throw error;
    throw new DestinationError(target.url, 'checking', error, true);
  }
  return { target, url: target.url, store, close: () => void store.close() };
}

function refuse(url: string, why: string): DestinationCheckError {
  return new DestinationCheckError(url, why);
}
