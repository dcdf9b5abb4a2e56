import { z } from 'zod';
import { ParameterValueSchema } from './common.ts';

const PARAMETER_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

export const PARAMETER_TYPES = ['text', 'number', 'datetime', 'enum'] as const;

/** A declared query parameter; the query's SQL refers to it as `{{key}}`. `value` is the default. */
export const QueryParameterSchema = z.strictObject({
  key: z.string().regex(PARAMETER_KEY, 'a parameter key is letters, digits and _').describe('Name used as {{key}} in the SQL'),
  type: z.enum(PARAMETER_TYPES).describe('text, number, datetime or enum'),
  value: ParameterValueSchema.describe('Default value'),
  enum_options: z.array(z.string()).optional().describe('Allowed values of an enum parameter'),
});
export type QueryParameter = z.infer<typeof QueryParameterSchema>;

/**
 * A parameter declaration as clients send it: `enumOptions`, the spelling of the real service and
 * of every official client (the service stores it as `enum_options`); `enum_options` is read too.
 */
const QueryParameterInputSchema = QueryParameterSchema.extend({
  enumOptions: z.array(z.string()).optional().describe('Allowed values of an enum parameter (as the official clients spell it)'),
}).transform(({ enumOptions, ...p }): QueryParameter => (enumOptions === undefined || p.enum_options !== undefined ? p : { ...p, enum_options: enumOptions }));

/** A parameter as GET /v1/query/{id} answers it: `enumOptions`, as the official clients read it (`enum_options` read too). */
export const QueryParameterViewSchema = z
  .object({ key: z.string(), type: z.string(), value: ParameterValueSchema, enumOptions: z.array(z.string()).optional(), enum_options: z.array(z.string()).optional() })
  .transform(({ enum_options, ...p }) => (p.enumOptions !== undefined || enum_options === undefined ? p : { ...p, enumOptions: enum_options }));
export type QueryParameterView = z.output<typeof QueryParameterViewSchema>;

/** A stored parameter as the wire spells it. */
export function parameterView({ enum_options, ...p }: QueryParameter): QueryParameterView {
  return enum_options === undefined ? p : { ...p, enumOptions: enum_options };
}

const QueryFieldsSchema = z.strictObject({
  name: z.string().min(1).describe('Query name'),
  query_sql: z.string().min(1).describe('SQL text; parameters as {{name}}'),
  description: z.string().optional(),
  parameters: z.array(QueryParameterInputSchema).optional(),
  query_parameters: z
    .record(z.string(), ParameterValueSchema)
    .optional()
    .describe('Name -> default value, each declared as a text parameter (the TypeScript client sends this map instead of parameters)'),
  is_private: z.boolean().optional(),
  is_temp: z.boolean().optional().describe('A temporary query: kept and executable like any, reported by GET /v1/query/{id}, left out of GET /v1/queries'),
  tags: z.array(z.string()).optional(),
});

/**
 * The one `parameters` list the service stores: either the list, or the name -> value map as text
 * parameters. Both at once (with a non-empty map) would be two truths: refused, naming both.
 */
function oneParameterList<T extends { parameters?: QueryParameter[] | undefined; query_parameters?: Record<string, unknown> | undefined; is_temp?: boolean | undefined }>(
  req: T,
  ctx: z.RefinementCtx,
): Omit<T, 'query_parameters'> {
  const { query_parameters: map, ...rest } = req;
  if (map === undefined) return rest;
  const entries = Object.entries(map);
  if (rest.parameters !== undefined) {
    if (entries.length > 0) ctx.addIssue({ code: 'custom', path: ['query_parameters'], message: 'give parameters or query_parameters, not both' });
    return rest;
  }
  const parameters: QueryParameter[] = [];
  for (const [key, value] of entries) {
    if (!PARAMETER_KEY.test(key)) {
      ctx.addIssue({ code: 'custom', path: ['query_parameters', key], message: 'a parameter key is letters, digits and _' });
      continue;
    }
    parameters.push({ key, type: 'text', value: String(value) });
  }
  return { ...rest, parameters };
}

/** POST /v1/query */
export const CreateQueryRequestSchema = QueryFieldsSchema.transform(oneParameterList);
export type CreateQueryRequest = z.infer<typeof CreateQueryRequestSchema>;

/** PATCH /v1/query/{id}: any subset of the create fields, plus `is_archived`. */
export const UpdateQueryRequestSchema = QueryFieldsSchema.partial()
  .extend({ is_archived: z.boolean().optional() })
  .transform(oneParameterList);
export type UpdateQueryRequest = z.infer<typeof UpdateQueryRequestSchema>;

export const QueryIdResponseSchema = z.object({ query_id: z.number().int() });

/** GET /v1/query/{id} */
export const QuerySchema = z.object({
  query_id: z.number().int(),
  name: z.string(),
  description: z.string(),
  tags: z.array(z.string()),
  version: z.number().int(),
  parameters: z.array(QueryParameterViewSchema),
  /** The SQL dialect, such as `v2 DuckDB SQL`: free text. */
  query_engine: z.string(),
  query_sql: z.string(),
  is_private: z.boolean(),
  is_archived: z.boolean(),
  /** Always false for a query saved through the API. */
  is_unsaved: z.boolean(),
  /** Created with `is_temp`: not listed by GET /v1/queries. */
  is_temp: z.boolean().optional(),
  owner: z.string(),
});
export type Query = z.infer<typeof QuerySchema>;

/** GET /v1/queries: the team's saved queries, newest first, without the temporary ones. */
export const QueryListSchema = z.object({
  queries: z.array(
    z.object({
      id: z.number().int(),
      name: z.string(),
      description: z.string(),
      owner: z.string(),
      tags: z.array(z.string()),
      is_private: z.boolean(),
      is_archived: z.boolean(),
      created_at: z.string(),
      updated_at: z.string(),
    }),
  ),
  total: z.number().int(),
});
export type QueryList = z.infer<typeof QueryListSchema>;
