import { z } from 'zod';
import { MAX_NAME_LENGTH } from './common.ts';

/** Column types an uploaded table may declare (the real service's uploads API). */
export const UPLOAD_COLUMN_TYPES = ['varchar', 'varbinary', 'uint256', 'int256', 'bigint', 'integer', 'double', 'boolean', 'timestamp', 'date'] as const;
export type UploadColumnType = (typeof UPLOAD_COLUMN_TYPES)[number];

const NAME = /^[a-z][a-z0-9_]*$/;

export const UploadColumnSchema = z.strictObject({
  name: z.string().min(1).max(MAX_NAME_LENGTH).describe('Column name'),
  type: z.preprocess((t) => (typeof t === 'string' ? t.toLowerCase() : t), z.enum(UPLOAD_COLUMN_TYPES)).describe('Column type'),
  nullable: z.boolean().default(true).describe('Whether the column takes NULL (default true)'),
  description: z.string().optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});
export type UploadColumn = z.output<typeof UploadColumnSchema>;

const tableName = z
  .string()
  .max(MAX_NAME_LENGTH, `at most ${MAX_NAME_LENGTH} characters`)
  .regex(NAME, 'a table name starts with a letter and holds a-z, 0-9 and _')
  .refine((n) => !n.startsWith('result_') && !n.startsWith('dataset_'), 'result_ names are materialized views and dataset_ names CSV uploads');

/** POST /v1/uploads (and the older /v1/table/create) */
export const CreateTableRequestSchema = z
  .strictObject({
    namespace: z.string().min(1).describe("The team the table belongs to (the key's team)"),
    table_name: tableName.describe('Becomes service.<namespace>.<table_name>'),
    schema: z.array(UploadColumnSchema).min(1, 'at least one column'),
    description: z.string().optional(),
    is_private: z.boolean().optional(),
  })
  .superRefine((req, ctx) => {
    const seen = new Set<string>();
    req.schema.forEach((c, i) => {
      if (seen.has(c.name.toLowerCase())) ctx.addIssue({ code: 'custom', path: ['schema', i, 'name'], message: `column "${c.name}" is declared twice` });
      seen.add(c.name.toLowerCase());
    });
  });
export type CreateTableRequest = z.output<typeof CreateTableRequestSchema>;

export const CreateTableResponseSchema = z.object({
  namespace: z.string(),
  table_name: z.string(),
  full_name: z.string(),
  example_query: z.string(),
  already_existed: z.boolean(),
  message: z.string(),
});
export type CreateTableResponse = z.infer<typeof CreateTableResponseSchema>;

/** POST /v1/uploads/{namespace}/{table}/insert */
export const InsertResponseSchema = z.object({ name: z.string(), rows_written: z.number().int(), bytes_written: z.number().int() });
export type InsertResponse = z.infer<typeof InsertResponseSchema>;

/** POST .../clear, DELETE /v1/uploads/{namespace}/{table} */
export const MessageResponseSchema = z.object({ message: z.string() });

export const TableOwnerSchema = z.object({ handle: z.string(), type: z.string() });

/** GET /v1/uploads: one table. `table_size_bytes` is a decimal string, as the official clients decode it. */
export const UploadedTableSchema = z.object({
  full_name: z.string(),
  is_private: z.boolean(),
  table_size_bytes: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
  owner: TableOwnerSchema,
  columns: z.array(z.object({ name: z.string(), type: z.string(), nullable: z.boolean() })),
});
export type UploadedTable = z.infer<typeof UploadedTableSchema>;

export const UploadListSchema = z.object({ tables: z.array(UploadedTableSchema), next_offset: z.number().int().optional() });
export type UploadList = z.infer<typeof UploadListSchema>;

/** The media types an insert body may have. */
export const INSERT_MEDIA_TYPES = { csv: 'text/csv', ndjson: 'application/x-ndjson' } as const;
