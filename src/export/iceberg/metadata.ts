import { z } from 'zod';
import type { PartitionSpecField } from './avro.ts';
import { IcebergMetadataError } from './errors.ts';
import type { IcebergSchema } from './types.ts';

/** `metadata/v<N>.metadata.json`: the file-system-table naming (Iceberg's Hadoop tables, icebird, DuckDB). */
export const METADATA_DIR = 'metadata';
export const VERSION_HINT = `${METADATA_DIR}/version-hint.text`;
const VERSION_NAME = /^metadata\/v(\d+)\.metadata\.json$/;

export const metadataFileName = (version: number): string => `${METADATA_DIR}/v${version}.metadata.json`;

export function versionOf(name: string): number | undefined {
  const match = VERSION_NAME.exec(name);
  return match ? Number(match[1]) : undefined;
}

/** Snapshot summary keys sluice records, so a re-run of the same export is recognised. */
export const SUMMARY_EXECUTION_ID = 'sluice.execution-id';
export const SUMMARY_FINGERPRINT = 'sluice.fingerprint';
/** An incremental job's high-water mark (a JSON `CursorState`), committed in the snapshot that holds the rows. */
export const SUMMARY_CURSOR = 'sluice.cursor';

const id = z.union([z.number().int(), z.bigint()]);

const snapshotSchema = z.looseObject({
  'snapshot-id': id,
  'parent-snapshot-id': id.optional(),
  'sequence-number': z.number().int(),
  'timestamp-ms': z.number().int(),
  'manifest-list': z.string(),
  summary: z.looseObject({ operation: z.string() }).catchall(z.string()),
  'schema-id': z.number().int().optional(),
});

/** What a commit relies on is validated; the rest is carried over untouched. */
export const tableMetadataSchema = z.looseObject({
  'format-version': z.literal(2),
  'table-uuid': z.string(),
  location: z.string(),
  'last-sequence-number': z.number().int(),
  'last-updated-ms': z.number().int(),
  'last-column-id': z.number().int(),
  'current-schema-id': z.number().int(),
  schemas: z.array(z.looseObject({ 'schema-id': z.number().int(), type: z.literal('struct'), fields: z.array(z.looseObject({ id: z.number().int(), name: z.string() })) })).min(1),
  'default-spec-id': z.number().int(),
  'partition-specs': z.array(z.looseObject({ 'spec-id': z.number().int(), fields: z.array(z.looseObject({ 'source-id': z.number().int(), 'field-id': z.number().int(), name: z.string(), transform: z.string() })) })),
  'last-partition-id': z.number().int(),
  'current-snapshot-id': id.nullable().optional(),
  snapshots: z.array(snapshotSchema).optional(),
  'snapshot-log': z.array(z.looseObject({})).optional(),
  'metadata-log': z.array(z.looseObject({})).optional(),
  refs: z.record(z.string(), z.looseObject({})).optional(),
  properties: z.record(z.string(), z.string()).optional(),
});

export interface Snapshot {
  'snapshot-id': number | bigint;
  'parent-snapshot-id'?: number | bigint;
  'sequence-number': number;
  'timestamp-ms': number;
  'manifest-list': string;
  summary: { operation: string; [key: string]: string };
  'schema-id'?: number;
}

/** Table metadata (format v2) as far as sluice reads or writes it; other keys are carried over as they are. */
export interface TableMetadata {
  'format-version': 2;
  'table-uuid': string;
  location: string;
  'last-sequence-number': number;
  'last-updated-ms': number;
  'last-column-id': number;
  'current-schema-id': number;
  schemas: IcebergSchema[];
  'default-spec-id': number;
  'partition-specs': { 'spec-id': number; fields: PartitionSpecField[] }[];
  'last-partition-id': number;
  'current-snapshot-id'?: number | bigint | null;
  snapshots?: Snapshot[];
  'snapshot-log'?: { 'timestamp-ms': number; 'snapshot-id': number | bigint }[];
  'metadata-log'?: { 'timestamp-ms': number; 'metadata-file': string }[];
  refs?: Record<string, { 'snapshot-id': number | bigint; type: string }>;
  properties?: Record<string, string>;
  [key: string]: unknown;
}

/** Parses JSON keeping 64-bit ids exact (integers beyond 2^53 become bigints). */
export function parseExactJson(text: string): unknown {
  return JSON.parse(text, (_key, value: unknown, context?: { source?: string }) =>
    typeof value === 'number' && !Number.isSafeInteger(value) && context?.source !== undefined && /^-?\d+$/.test(context.source) ? BigInt(context.source) : value,
  );
}

/** JSON text of a value holding bigints (64-bit ids), written as plain numbers. */
export function exactJsonText(value: unknown, indent?: number): string {
  const rawJSON = (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON;
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? rawJSON(v.toString()) : v), indent);
}

/** Parses metadata JSON keeping 64-bit ids exact (ids beyond 2^53 become bigints). */
export function parseMetadata(bytes: Uint8Array, url: string, file: string): TableMetadata {
  let json: unknown;
  try {
    json = parseExactJson(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (error) {
    throw new IcebergMetadataError(url, file, `not JSON: ${(error as Error).message}`);
  }
  return validMetadata(json, url, file);
}

/** Table metadata already parsed (a catalog's response), checked as `parseMetadata` checks a file. */
export function validMetadata(json: unknown, url: string, file: string): TableMetadata {
  const parsed = tableMetadataSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const at = issue.path.join('.');
    const detail = at === 'format-version' ? `format-version ${JSON.stringify((json as Record<string, unknown>)?.['format-version'])}; sluice writes format version 2` : `${at || '(root)'}: ${issue.message}`;
    throw new IcebergMetadataError(url, file, detail);
  }
  return parsed.data as unknown as TableMetadata;
}

export function encodeMetadata(metadata: TableMetadata): Uint8Array {
  return new TextEncoder().encode(`${exactJsonText(metadata, 2)}\n`);
}
