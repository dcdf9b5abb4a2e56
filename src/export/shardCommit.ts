import { randomBytes } from 'node:crypto';
import { PreconditionFailedError } from '../kit/index.ts';
import { type Destination, type Marker, type SharedArea } from './destination.ts';
import type { Commit } from './commit.ts';
import { encodeManifest, type Manifest, SUCCESS_NAME } from './manifest.ts';
import { manifestCommit } from './manifestCommit.ts';

/** How the manifest of an output is published: only over the version read (default), or whatever is there. */
export type CommitMode = 'conditional' | 'unconditional';

/** What one commit of a sharded export did: published it, or found another committer had (the same export). */
export type ShardCommitOutcome = 'committed' | 'committed-by-another';

/**
 * The one commit of a sharded export: the parts every shard wrote in `area` plus `_manifest.json`
 * and `_SUCCESS`, published through the destination's transaction. Conditional (the default): the
 * manifest is created only if absent, or replaces only the version the plan recorded
 * (`replaces`), so of two committers racing exactly one publishes. The other finds the winner's
 * manifest: the same export (execution, fingerprint, files) is success, anything else a
 * `PreconditionFailedError`; either way it removes nothing but its own staging. Unconditional: last
 * writer wins, for stores without conditional writes.
 */
export async function commitShards(
  destination: Destination,
  area: SharedArea,
  manifest: Manifest,
  replaces: string | null,
  mode: CommitMode,
  signal?: AbortSignal,
): Promise<ShardCommitOutcome> {
  const current = await manifestCommit.read(destination, signal);
  if (current !== undefined && sameExport(current, manifest)) {
    await manifestCommit.finish?.(destination, current, signal);
    return 'committed-by-another';
  }
  if (mode === 'conditional' && (current?.version ?? null) !== replaces) {
    throw new PreconditionFailedError(
      destination.url,
      '_manifest.json',
      `the output changed since the plan was made (it holds ${current === undefined ? 'nothing' : `execution ${current.executionId}`} now${replaces === null ? ', the plan expected nothing' : ''}): another run committed there; start a new run (a new run id) to export again`,
    );
  }
  const files = manifest.files.map((f) => f.path);
  const tx = await area.begin({ attemptId: `c${randomBytes(6).toString('hex')}`, previous: current?.owns ?? [], markers: manifestCommit.records, ...(signal ? { signal } : {}) }, files);
  const condition = mode === 'unconditional' ? undefined : current?.version === undefined ? { ifAbsent: true as const } : { ifVersion: current.version };
  const markers: Marker[] = [
    { name: '_manifest.json', body: encodeManifest(manifest), contentType: 'application/json', ...(condition ? { condition } : {}) },
    { name: SUCCESS_NAME, body: new Uint8Array(), contentType: 'text/plain' },
  ];
  try {
    await tx.commit(markers);
    return 'committed';
  } catch (error) {
    await tx.abort(error, files);
    if (!(error instanceof PreconditionFailedError)) throw error;
    const winner = await manifestCommit.read(destination, signal);
    if (winner !== undefined && sameExport(winner, manifest)) return 'committed-by-another';
    throw error;
  }
}

/** Whether a committed output is this export: the same execution and options, the same files. */
export function sameExport(commit: Commit, manifest: Manifest): boolean {
  if (commit.executionId !== manifest.execution_id || commit.fingerprint !== manifest.fingerprint) return false;
  const ours = manifest.files.map((f) => f.path).sort();
  const theirs = [...commit.files].sort();
  return ours.length === theirs.length && ours.every((p, i) => p === theirs[i]);
}
