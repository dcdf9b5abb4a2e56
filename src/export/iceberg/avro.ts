import { Readable } from 'node:stream';
import avro from 'avsc';
import type { IcebergType } from './types.ts';

// Iceberg manifests and manifest lists are Avro container files whose schemas carry Iceberg field
// ids (spec, "Manifests" and "Manifest Lists", format v2). avsc encodes them; longs are bigints
// throughout so snapshot ids and counts keep all 64 bits.

const longType = avro.types.LongType.__with({
  fromBuffer: (buf: Buffer) => buf.readBigInt64LE(),
  toBuffer: (n: bigint | number) => {
    const buf = Buffer.alloc(8);
    buf.writeBigInt64LE(BigInt(n));
    return buf;
  },
  fromJSON: (v: unknown) => BigInt(v as string),
  toJSON: (n: bigint) => Number(n),
  isValid: (n: unknown) => typeof n === 'bigint' || (typeof n === 'number' && Number.isSafeInteger(n)),
  compare: (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0),
});

const forSchema = (schema: object) => avro.Type.forSchema(schema as avro.Schema, { registry: { long: longType } as never });

const optional = (name: string, type: unknown, id: number) => ({ name, type: ['null', type], default: null, 'field-id': id });

/** Avro type of an identity partition value (spec, Appendix A), for the types a partition source may have. */
export function partitionAvroType(type: IcebergType): unknown {
  switch (type) {
    case 'boolean':
    case 'int':
    case 'long':
    case 'string':
      return type;
    case 'date':
      return { type: 'int', logicalType: 'date' };
    default:
      return undefined;
  }
}

export interface PartitionSpecField {
  'source-id': number;
  'field-id': number;
  name: string;
  transform: string;
}

/** The `manifest_entry` schema for one partition spec (the partition struct differs per spec). */
export function manifestEntrySchema(partition: { field: PartitionSpecField; avroType: unknown }[]): object {
  return {
    type: 'record',
    name: 'manifest_entry',
    fields: [
      { name: 'status', type: 'int', 'field-id': 0 },
      optional('snapshot_id', 'long', 1),
      optional('sequence_number', 'long', 3),
      optional('file_sequence_number', 'long', 4),
      {
        name: 'data_file',
        'field-id': 2,
        type: {
          type: 'record',
          name: 'r2',
          fields: [
            { name: 'content', type: 'int', 'field-id': 134 },
            { name: 'file_path', type: 'string', 'field-id': 100 },
            { name: 'file_format', type: 'string', 'field-id': 101 },
            {
              name: 'partition',
              'field-id': 102,
              type: { type: 'record', name: 'r102', fields: partition.map((p) => optional(p.field.name, p.avroType, p.field['field-id'])) },
            },
            { name: 'record_count', type: 'long', 'field-id': 103 },
            { name: 'file_size_in_bytes', type: 'long', 'field-id': 104 },
          ],
        },
      },
    ],
  };
}

export const manifestFileSchema = {
  type: 'record',
  name: 'manifest_file',
  fields: [
    { name: 'manifest_path', type: 'string', 'field-id': 500 },
    { name: 'manifest_length', type: 'long', 'field-id': 501 },
    { name: 'partition_spec_id', type: 'int', 'field-id': 502 },
    { name: 'content', type: 'int', 'field-id': 517 },
    { name: 'sequence_number', type: 'long', 'field-id': 515 },
    { name: 'min_sequence_number', type: 'long', 'field-id': 516 },
    { name: 'added_snapshot_id', type: 'long', 'field-id': 503 },
    { name: 'added_files_count', type: 'int', 'field-id': 504 },
    { name: 'existing_files_count', type: 'int', 'field-id': 505 },
    { name: 'deleted_files_count', type: 'int', 'field-id': 506 },
    { name: 'added_rows_count', type: 'long', 'field-id': 512 },
    { name: 'existing_rows_count', type: 'long', 'field-id': 513 },
    { name: 'deleted_rows_count', type: 'long', 'field-id': 514 },
  ],
};

export interface ManifestEntry {
  status: number;
  snapshot_id: bigint | null;
  sequence_number: bigint | null;
  file_sequence_number: bigint | null;
  data_file: {
    content: number;
    file_path: string;
    file_format: string;
    partition: Record<string, unknown>;
    record_count: bigint;
    file_size_in_bytes: bigint;
  };
}

export interface ManifestFile {
  manifest_path: string;
  manifest_length: bigint;
  partition_spec_id: number;
  content: number;
  sequence_number: bigint;
  min_sequence_number: bigint;
  added_snapshot_id: bigint;
  added_files_count: number;
  existing_files_count: number;
  deleted_files_count: number;
  added_rows_count: bigint;
  existing_rows_count: bigint;
  deleted_rows_count: bigint;
}

/** One Avro container file (uncompressed blocks) holding `records`, with Iceberg's key-value metadata. */
export async function encodeAvroFile(schema: object, records: readonly unknown[], metadata: Record<string, string>): Promise<Uint8Array> {
  const type = forSchema(schema);
  const encoder = new avro.streams.BlockEncoder(type, {
    codec: 'null',
    // The header even without records (avsc writes it lazily): an empty manifest list is still a valid file.
    writeHeader: 'always',
    metadata: Object.fromEntries(Object.entries(metadata).map(([k, v]) => [k, Buffer.from(v)])),
  } as never);
  const chunks: Buffer[] = [];
  const done = new Promise<void>((resolve, reject) => {
    encoder.on('data', (chunk: Buffer) => chunks.push(chunk));
    encoder.on('end', resolve);
    encoder.on('error', reject);
    encoder.on('typeError', (error: Error) => reject(error));
  });
  for (const record of records) encoder.write(record);
  encoder.end();
  await done;
  return new Uint8Array(Buffer.concat(chunks));
}

/** Every record of an Avro container file, decoded with the file's own (writer) schema. */
export async function decodeAvroFile(bytes: Uint8Array): Promise<Record<string, unknown>[]> {
  const decoder = new avro.streams.BlockDecoder({ parseHook: (schema: object) => forSchema(schema) } as never);
  const records: Record<string, unknown>[] = [];
  const done = new Promise<void>((resolve, reject) => {
    decoder.on('data', (record: Record<string, unknown>) => records.push(record));
    decoder.on('end', resolve);
    decoder.on('error', reject);
  });
  Readable.from([Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)]).pipe(decoder);
  await done;
  return records;
}
