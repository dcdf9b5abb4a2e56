// The calls about what a team stores, beside executions: saved queries listed, tables created
// with a schema and filled from CSV or NDJSON (uploads v2), datasets listed and searched.
// Writes that are not safe to repeat (create, insert, delete) are resent only when the first
// attempt provably did nothing (`creates`, as executions): an insert sent twice adds its rows twice.
import type { z } from 'zod';
import {
  CreateTableRequestSchema,
  CreateTableResponseSchema,
  DatasetListSchema,
  DatasetSchema,
  INSERT_MEDIA_TYPES,
  InsertResponseSchema,
  MessageResponseSchema,
  PATHS,
  QueryIdResponseSchema,
  QueryListSchema,
  SearchDatasetsRequestSchema,
  SearchDatasetsResponseSchema,
  UploadListSchema,
  type CreateTableRequest,
  type SearchDatasetsRequest,
} from '../protocol/index.ts';
import { InvalidArgumentError } from './errors.ts';
import { describeIssues, type Http } from './http.ts';
import type { Idempotency } from './retry-policy.ts';
import type { RequestSpec } from './transport.ts';

export interface CatalogCallOptions {
  signal?: AbortSignal | undefined;
}

export interface ListOptions extends CatalogCallOptions {
  limit?: number;
  offset?: number;
}

export interface DatasetListOptions extends ListOptions {
  ownerHandle?: string;
  type?: string;
}

export class Catalog {
  readonly #http: Http;

  constructor(http: Http) {
    this.#http = http;
  }

  /** GET /v1/queries: the team's saved queries, newest first (temporary ones left out). */
  async listQueries(options: ListOptions = {}): Promise<z.output<typeof QueryListSchema>> {
    return this.#http.json(this.#spec('listQueries', 'GET', PATHS.queries(), options, 'idempotent', page(options)), QueryListSchema);
  }

  /** POST /v1/query/{id}/private or /unprivate. */
  async setQueryPrivate(queryId: number, isPrivate: boolean, options: CatalogCallOptions = {}): Promise<z.output<typeof QueryIdResponseSchema>> {
    const path = isPrivate ? PATHS.privateQuery(queryId) : PATHS.unprivateQuery(queryId);
    return this.#http.json(this.#spec(isPrivate ? 'makePrivate' : 'makePublic', 'POST', path, options, 'idempotent'), QueryIdResponseSchema);
  }

  /** GET /v1/uploads: the team's tables. */
  async listTables(options: ListOptions = {}): Promise<z.output<typeof UploadListSchema>> {
    return this.#http.json(this.#spec('listTables', 'GET', PATHS.uploads(), options, 'idempotent', page(options)), UploadListSchema);
  }

  /** POST /v1/uploads: a new empty table `service.<namespace>.<table_name>` of these columns (409 if it exists). */
  async createTable(req: z.input<typeof CreateTableRequestSchema>, options: CatalogCallOptions = {}): Promise<z.output<typeof CreateTableResponseSchema>> {
    const spec = this.#spec('createTable', 'POST', PATHS.uploads(), options, 'creates');
    spec.body = checked('createTable', req);
    return this.#http.json(spec, CreateTableResponseSchema);
  }

  /** POST /v1/uploads/{namespace}/{table}/insert: appends CSV (header first) or NDJSON rows, all or none. */
  async insertRows(namespace: string, table: string, data: string | Uint8Array, format: 'csv' | 'ndjson', options: CatalogCallOptions = {}): Promise<z.output<typeof InsertResponseSchema>> {
    const spec = this.#spec('insertRows', 'POST', PATHS.uploadInsert(namespace, table), options, 'creates');
    spec.rawBody = { data, contentType: INSERT_MEDIA_TYPES[format] };
    return this.#http.json(spec, InsertResponseSchema);
  }

  /** POST /v1/uploads/{namespace}/{table}/clear: removes every row, keeps the table. */
  async clearTable(namespace: string, table: string, options: CatalogCallOptions = {}): Promise<z.output<typeof MessageResponseSchema>> {
    return this.#http.json(this.#spec('clearTable', 'POST', PATHS.uploadClear(namespace, table), options, 'idempotent'), MessageResponseSchema);
  }

  /** DELETE /v1/uploads/{namespace}/{table}. */
  async deleteTable(namespace: string, table: string, options: CatalogCallOptions = {}): Promise<z.output<typeof MessageResponseSchema>> {
    return this.#http.json(this.#spec('deleteTable', 'DELETE', PATHS.uploadTable(namespace, table), options, 'creates'), MessageResponseSchema);
  }

  /** GET /v1/datasets. */
  async listDatasets(options: DatasetListOptions = {}): Promise<z.output<typeof DatasetListSchema>> {
    const query = { ...page(options), owner_handle: options.ownerHandle, type: options.type };
    return this.#http.json(this.#spec('listDatasets', 'GET', PATHS.datasets(), options, 'idempotent', query), DatasetListSchema);
  }

  /** GET /v1/datasets/{full_name}. */
  async getDataset(fullName: string, options: CatalogCallOptions = {}): Promise<z.output<typeof DatasetSchema>> {
    return this.#http.json(this.#spec('getDataset', 'GET', PATHS.dataset(fullName), options, 'idempotent'), DatasetSchema);
  }

  /** POST /v1/datasets/search. */
  async searchDatasets(req: SearchDatasetsRequest = {}, options: CatalogCallOptions = {}): Promise<z.output<typeof SearchDatasetsResponseSchema>> {
    const spec = this.#spec('searchDatasets', 'POST', PATHS.searchDatasets(), options, 'idempotent');
    const parsed = SearchDatasetsRequestSchema.safeParse(req);
    if (!parsed.success) throw new InvalidArgumentError(describeIssues(parsed.error), { method: 'searchDatasets' });
    spec.body = parsed.data;
    return this.#http.json(spec, SearchDatasetsResponseSchema);
  }

  #spec(operation: string, httpMethod: RequestSpec['httpMethod'], path: string, options: CatalogCallOptions, idempotency: Idempotency, query?: RequestSpec['query']): RequestSpec {
    return { operation, httpMethod, path, idempotency, signal: options.signal, ...(query === undefined ? {} : { query }) };
  }
}

function page(options: ListOptions): Record<string, string | undefined> {
  return { limit: options.limit?.toString(), offset: options.offset?.toString() };
}

function checked(operation: string, req: z.input<typeof CreateTableRequestSchema>): CreateTableRequest {
  const parsed = CreateTableRequestSchema.safeParse(req);
  if (!parsed.success) throw new InvalidArgumentError(describeIssues(parsed.error), { method: operation });
  return parsed.data;
}
