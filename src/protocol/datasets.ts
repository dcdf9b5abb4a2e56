import { z } from 'zod';
import { TableOwnerSchema } from './tables.ts';

/** Dataset types of the real service; this service has uploaded tables and materialized views. */
export const DATASET_TYPES = ['transformation_view', 'transformation_table', 'uploaded_table', 'decoded_table', 'spell', 'dune_table'] as const;

export const DatasetSchema = z.object({
  type: z.string(),
  full_name: z.string(),
  is_private: z.boolean(),
  columns: z.array(z.object({ name: z.string(), type: z.string(), nullable: z.boolean() })),
  owner: TableOwnerSchema,
  metadata: z.record(z.string(), z.string()),
  created_at: z.string(),
  updated_at: z.string(),
});
export type Dataset = z.infer<typeof DatasetSchema>;

/** GET /v1/datasets */
export const DatasetListSchema = z.object({ datasets: z.array(DatasetSchema), total: z.number().int() });
export type DatasetList = z.infer<typeof DatasetListSchema>;

/** POST /v1/datasets/search */
export const SearchDatasetsRequestSchema = z.strictObject({
  query: z.string().optional().describe('Words the full name or description contains'),
  categories: z.array(z.string()).optional(),
  blockchains: z.array(z.string()).optional(),
  dataset_types: z.array(z.enum(DATASET_TYPES)).optional(),
  schemas: z.array(z.string()).optional().describe('Schemas (the part after the catalog: a team) to search in'),
  owner_scope: z.enum(['all', 'me', 'team']).optional(),
  include_private: z.boolean().optional(),
  include_schema: z.boolean().optional(),
  include_metadata: z.boolean().optional(),
  limit: z.number().int().min(1).max(250).optional(),
  offset: z.number().int().min(0).optional(),
});
export type SearchDatasetsRequest = z.infer<typeof SearchDatasetsRequestSchema>;

export const SearchDatasetResultSchema = z.object({
  full_name: z.string(),
  category: z.string(),
  dataset_type: z.string().optional(),
  visibility: z.string().optional(),
  owner_scope: z.string().optional(),
  description: z.string().optional(),
  schema: z.unknown().optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});

export const SearchDatasetsResponseSchema = z.object({
  total: z.number().int(),
  results: z.array(SearchDatasetResultSchema),
  pagination: z.object({ limit: z.number().int(), offset: z.number().int(), next_offset: z.number().int().optional(), has_more: z.boolean() }),
});
export type SearchDatasetsResponse = z.infer<typeof SearchDatasetsResponseSchema>;
