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
