import { ConfigError, PreconditionFailedError } from '../kit/index.ts';
import { type Destination, type Marker, type Transaction } from './destination.ts';
import type { Commit, CommitProtocol } from './commit.ts';
import { AppendConflictError, ManifestInvalidError } from './errors.ts';
import { encodeManifest, type Manifest, MANIFEST_NAME, manifestSchema, SUCCESS_NAME } from './manifest.ts';

/** Field metadata holding the service's type of a column (as `types/arrow.ts` writes it). */
const SERVICE_TYPE = 'service.type';

const MANIFEST_RECORDS = [SUCCESS_NAME, MANIFEST_NAME];

/**
 * The built-in commit: the data files, then `_manifest.json` (the record: execution, schema, files),
 * then `_SUCCESS` (the marker Spark and Hadoop readers wait for). The manifest is published
 * create-only, or replace-if-unchanged against the one read at the start, so of two runs committing
 * to one place at once exactly one wins.
 */
export const manifestCommit: CommitProtocol = {
  type: 'manifest',
  records: MANIFEST_RECORDS,

  async read(destination, signal) {
    const found = await readVersioned(destination, MANIFEST_NAME, signal);
    if (found === undefined) return undefined;
    const manifest = decodeManifest(destination.url, found.body);
    const files = manifest.files.map((f) => f.path);
    return {
      executionId: manifest.execution_id,
      fingerprint: manifest.fingerprint ?? null,
      rows: manifest.total_rows ?? manifest.files.reduce((n, f) => n + f.rows, 0),
      bytes: manifest.total_bytes ?? manifest.files.reduce((n, f) => n + f.bytes, 0),
      files,
      owns: [...files, MANIFEST_NAME, SUCCESS_NAME],
      version: found.version,
      job: manifest.job ?? undefined,
      layout: manifest.format === undefined ? undefined : { format: manifest.format, partitionBy: manifest.partition_by ?? [] },
      columns: manifest.schema?.fields.map((f) => ({ name: f.name, type: f.metadata?.[SERVICE_TYPE] ?? f.type })),
      cursor: manifest.incremental ?? undefined,
      entries: manifest.files.map((f) => ({ path: f.path, rows: f.rows, bytes: f.bytes, sha256: f.sha256, partition: f.partition ?? {} })),
      shards: manifest.shards === undefined ? undefined : { runId: manifest.shards.run_id, count: manifest.shards.count },
    };
  },

  async finish(destination, _commit, signal) {
    // `_SUCCESS` is written after the manifest: a kill in between leaves a manifest without it.
    if (destination.publish === undefined || (await destination.read(SUCCESS_NAME, signal)) !== undefined) return;
    await destination.publish(SUCCESS_NAME, new Uint8Array(), { ifAbsent: true }, { contentType: 'text/plain', ...(signal ? { signal } : {}) }).catch((error: unknown) => {
      if (!(error instanceof PreconditionFailedError)) throw error;
    });
  },

  async publish(tx, run, previous) {
    // Append: the new manifest lists the committed files and this run's, and the directory swap
    // (or the S3 cleanup) keeps the committed ones.
    const content = run.mode === 'append' && previous !== undefined ? await appended(tx, run, previous) : run;
    const body = encodeManifest(content);
    const markers: Marker[] = [
      { name: MANIFEST_NAME, body, contentType: 'application/json', condition: previous?.version === undefined ? { ifAbsent: true } : { ifVersion: previous.version } },
      { name: SUCCESS_NAME, body: new Uint8Array(), contentType: 'text/plain' },
    ];
    // A destination without versions gets no condition for a replacement it cannot check.
    if (previous !== undefined && previous.version === undefined) markers[0] = { ...markers[0]!, condition: undefined };
    await tx.commit(markers);
    const files = content.files.map((f) => f.path);
    return {
      executionId: content.execution_id,
      fingerprint: content.fingerprint,
      rows: content.total_rows,
      bytes: content.total_bytes,
      files,
      owns: [...files, MANIFEST_NAME, SUCCESS_NAME],
      // The commit does not report the new version: the next `read` gets it.
      version: undefined,
      job: content.job ?? undefined,
      layout: { format: content.format, partitionBy: content.partition_by },
      columns: content.schema.fields.map((f) => ({ name: f.name, type: f.metadata[SERVICE_TYPE] ?? f.type })),
      cursor: content.incremental ?? undefined,
      entries: content.files,
    };
  },
};

/** `run` (this run's files) on top of the committed output: one manifest listing both. */
async function appended(tx: Transaction, run: Manifest, previous: Commit): Promise<Manifest> {
  if (previous.entries === undefined) throw new AppendConflictError('the committed output', 'its record does not list its files with their sizes, so there is nothing to append to; use mode: replace or another path');
  if (tx.carry === undefined) throw new ConfigError('output', [{ path: 'mode', message: 'this destination cannot keep committed files in a new commit: use mode: replace', value: 'append' }]);
  await tx.carry(previous.entries.map((f) => f.path));
  const files = [...previous.entries, ...run.files];
  return {
    ...run,
    total_rows: files.reduce((n, f) => n + f.rows, 0),
    total_bytes: files.reduce((n, f) => n + f.bytes, 0),
    files,
  };
}

/**
 * The manifest commit without conditions (`commit: unconditional`), for object stores that do not
 * honour conditional writes: the manifest is put whatever is there, so of two writers committing to
 * one place at once the last one wins.
 */
export const unconditionalManifestCommit: CommitProtocol = {
  ...manifestCommit,
  type: 'manifest-unconditional',
  publish(tx, content, previous, destination) {
    return manifestCommit.publish(withoutConditions(tx), content, previous, destination);
  },
};

function withoutConditions(tx: Transaction): Transaction {
  return { ...tx, write: tx.write.bind(tx), abort: tx.abort.bind(tx), ...(tx.carry ? { carry: tx.carry.bind(tx) } : {}), commit: (markers) => tx.commit(markers.map(({ condition: _condition, ...marker }) => marker)) };
}

/** The manifest as parsed for the next run: only the fields it relies on are checked strictly. */
function decodeManifest(url: string, bytes: Uint8Array): ReturnType<typeof manifestSchema.parse> {
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder().decode(bytes));
  } catch (error) {
    throw new ManifestInvalidError(url, `not JSON: ${(error as Error).message}`);
  }
  const parsed = manifestSchema.safeParse(json);
  if (!parsed.success) throw new ManifestInvalidError(url, parsed.error.issues[0]?.message ?? 'unexpected shape');
  return parsed.data;
}

async function readVersioned(destination: Destination, name: string, signal: AbortSignal | undefined): Promise<{ body: Uint8Array; version: string | undefined } | undefined> {
  if (destination.readVersioned) return destination.readVersioned(name, signal);
  const body = await destination.read(name, signal);
  return body === undefined ? undefined : { body, version: undefined };
}
