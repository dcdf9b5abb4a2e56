import { z } from 'zod';
import { MAX_NAME_LENGTH } from './common.ts';

/** POST /v1/uploads/csv */
export const UploadCsvRequestSchema = z.strictObject({
  table_name: z
    .string()
    .max(MAX_NAME_LENGTH, `at most ${MAX_NAME_LENGTH} characters`)
    .regex(/^[a-z][a-z0-9_]*$/, 'a table name starts with a letter and holds a-z, 0-9 and _').describe('Becomes service.<team>.dataset_<table_name>'),
  data: z.string().min(1).describe('The CSV text, header row first'),
  description: z.string().optional(),
  is_private: z.boolean().optional(),
});
export type UploadCsvRequest = z.infer<typeof UploadCsvRequestSchema>;

/** `table_name` is the full name (as the older clients read it); `full_name` and `example_query` as the newer ones do. */
export const UploadCsvResponseSchema = z.object({ success: z.boolean(), table_name: z.string(), full_name: z.string().optional(), example_query: z.string().optional() });
