import { z } from 'zod';
import { ParameterValueSchema } from './common.ts';

export const PARAMETER_TYPES = ['text', 'number', 'datetime', 'enum'] as const;

/** A declared query parameter; the query's SQL refers to it as `{{key}}`. `value` is the default. */
export const QueryParameterSchema = z.strictObject({
  key: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'a parameter key is letters, digits and _').describe('Name used as {{key}} in the SQL'),
  type: z.enum(PARAMETER_TYPES).describe('text, number, datetime or enum'),
  value: ParameterValueSchema.describe('Default value'),
  enum_options: z.array(z.string()).optional().describe('Allowed values of an enum parameter'),
});
export type QueryParameter = z.infer<typeof QueryParameterSchema>;

/** POST /v1/query */
export const CreateQueryRequestSchema = z.strictObject({
  name: z.string().min(1).describe('Query name'),
  query_sql: z.string().min(1).describe('SQL text; parameters as {{name}}'),
  description: z.string().optional(),
  parameters: z.array(QueryParameterSchema).optional(),
  is_private: z.boolean().optional(),
  tags: z.array(z.string()).optional(),
});
export type CreateQueryRequest = z.infer<typeof CreateQueryRequestSchema>;

/** PATCH /v1/query/{id}: any subset of the create fields, plus `is_archived`. */
export const UpdateQueryRequestSchema = CreateQueryRequestSchema.partial().extend({
  is_archived: z.boolean().optional(),
});
export type UpdateQueryRequest = z.infer<typeof UpdateQueryRequestSchema>;

export const QueryIdResponseSchema = z.object({ query_id: z.number().int() });

/** GET /v1/query/{id} */
export const QuerySchema = z.object({
  query_id: z.number().int(),
  name: z.string(),
  description: z.string(),
  tags: z.array(z.string()),
  version: z.number().int(),
  parameters: z.array(
    z.object({ key: z.string(), type: z.string(), value: ParameterValueSchema, enum_options: z.array(z.string()).optional() }),
  ),
  query_sql: z.string(),
  is_private: z.boolean(),
  is_archived: z.boolean(),
  owner: z.string(),
});
export type Query = z.infer<typeof QuerySchema>;
