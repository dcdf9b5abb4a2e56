import type { Field, Schema } from 'apache-arrow';
import { z } from 'zod';
import type { CursorState } from './commit.ts';
import type { FileEntry } from './partFile.ts';

export const MANIFEST_NAME = '_manifest.json';
export const SUCCESS_NAME = '_SUCCESS';

const relativeName = z
  .string()
  .min(1)
  .refine((n) => !n.startsWith('/') && !n.split('/').some((s) => s === '' || s === '.' || s === '..'), 'must be a relative path');

/**
 * The manifest is the commit record. Only what the next run relies on (the file list) is
 * validated strictly when read back; the rest is for people and downstream tools.
 */
export const manifestSchema = z.object({
  version: z.literal(1),
  execution_id: z.string(),
  fingerprint: z.string().nullable().optional(),
  total_rows: z.number().optional(),
  total_bytes: z.number().optional(),
  files: z.array(
    z.object({ path: relativeName, rows: z.number(), bytes: z.number(), sha256: z.string(), partition: z.record(z.string(), z.string().nullable()).optional() }),
  ),
  job: z.string().nullable().optional(),
  mode: z.enum(['replace', 'append']).optional(),
  format: z.string().optional(),
  partition_by: z.array(z.string()).optional(),
  schema: z.object({ fields: z.array(z.object({ name: z.string(), type: z.string(), metadata: z.record(z.string(), z.string()).optional() })) }).optional(),
  incremental: z
    .object({
      column: z.string(),
      type: z.string(),
      value: z.string(),
      window: z.array(z.tuple([z.string(), z.string()])).optional(),
    })
    .nullable()
    .optional(),
  shards: z.object({ run_id: z.string(), count: z.number() }).optional(),
});

export interface ManifestField {
  name: string;
  type: string;
  nullable: boolean;
  metadata: Record<string, string>;
  children?: ManifestField[];
}

export interface Manifest {
  version: 1;
  execution_id: string;
  query_id: number | null;
  parameters: Record<string, unknown> | null;
  ended_at: string | null;
  /** `ExportMeta.fingerprint`: with the execution id, what the files hold. */
  fingerprint: string | null;
  /** The job that wrote it (null: a library call). */
  job: string | null;
  /** replace: the files are the whole output; append: the run's files were added to the previous commit's. */
  mode: 'replace' | 'append';
  /** An incremental job's high-water mark after this commit (null: not incremental). */
  incremental: CursorState | null;
  written_at: string;
  format: string;
  partition_by: string[];
  total_rows: number;
  total_bytes: number;
  files: FileEntry[];
  schema: { fields: ManifestField[]; metadata: Record<string, string> };
  /** A sharded export: the run id its shards shared and how many there were. */
  shards?: { run_id: string; count: number };
}

export function describeField(field: Field): ManifestField {
  const children = field.type.children as Field[] | undefined;
  return {
    name: field.name,
    type: String(field.type),
    nullable: field.nullable,
    metadata: Object.fromEntries(field.metadata),
    ...(children && children.length > 0 ? { children: children.map(describeField) } : {}),
  };
}

export function describeSchema(schema: Schema): Manifest['schema'] {
  return { fields: schema.fields.map(describeField), metadata: Object.fromEntries(schema.metadata) };
}

export function encodeManifest(manifest: Manifest): Uint8Array {
  // Parameters may hold bigints; JSON.stringify would throw on them.
  const text = JSON.stringify(manifest, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), 2);
  return new TextEncoder().encode(`${text}\n`);
}

/** What an export says about itself in its manifest (see `ExportMeta` in writeExport.ts). */
export interface ManifestMeta {
  readonly executionId: string;
  readonly queryId?: number | undefined;
  readonly parameters?: Record<string, unknown> | undefined;
  readonly endedAt?: string | undefined;
  readonly fingerprint?: string | undefined;
  readonly job?: string | undefined;
  readonly cursor?: (() => CursorState | undefined) | undefined;
}

/**
 * The manifest of an export of `files`: the one place a `Manifest` is made, for an export written
 * by one process (`writeExport`) and for one whose parts shards wrote (`shards`).
 */
export function buildManifest(
  meta: ManifestMeta,
  layout: { readonly mode: Manifest['mode']; readonly format: string; readonly partitionBy: readonly string[] },
  files: FileEntry[],
  schema: Manifest['schema'],
  shards?: Manifest['shards'],
): Manifest {
  return {
    version: 1,
    execution_id: meta.executionId,
    query_id: meta.queryId ?? null,
    parameters: meta.parameters ?? null,
    ended_at: meta.endedAt ?? null,
    fingerprint: meta.fingerprint ?? null,
    job: meta.job ?? null,
    mode: layout.mode,
    incremental: meta.cursor?.() ?? null,
    written_at: new Date().toISOString(),
    format: layout.format,
    partition_by: [...layout.partitionBy],
    total_rows: files.reduce((n, f) => n + f.rows, 0),
    total_bytes: files.reduce((n, f) => n + f.bytes, 0),
    files,
    schema,
    ...(shards === undefined ? {} : { shards }),
  };
}
