import { type Destination, type Marker, PreconditionFailedError, type Transaction } from '../kit/index.ts';
import type { Commit, CommitProtocol } from './commit.ts';
import { ManifestInvalidError } from './errors.ts';
import { encodeManifest, MANIFEST_NAME, manifestSchema, SUCCESS_NAME } from './manifest.ts';

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
    };
  },

  async finish(destination, _commit, signal) {
    // `_SUCCESS` is written after the manifest: a kill in between leaves a manifest without it.
    if (destination.publish === undefined || (await destination.read(SUCCESS_NAME, signal)) !== undefined) return;
    await destination.publish(SUCCESS_NAME, new Uint8Array(), { ifAbsent: true }, { contentType: 'text/plain', ...(signal ? { signal } : {}) }).catch((error: unknown) => {
      if (!(error instanceof PreconditionFailedError)) throw error;
    });
  },

  async publish(tx, content, previous) {
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
    };
  },
};

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
  return { ...tx, write: tx.write.bind(tx), abort: tx.abort.bind(tx), commit: (markers) => tx.commit(markers.map(({ condition: _condition, ...marker }) => marker)) };
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
