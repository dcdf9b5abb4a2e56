/** The API prefix under the origin (protocol.md section 1): base URL is `{origin}/api`. */
export const API_PREFIX = '/api';

const enc = encodeURIComponent;

/** Paths under the base URL, one per operation of protocol.md section 3. */
export const PATHS = {
  executeSql: () => '/v1/sql/execute',
  executeQuery: (queryId: number) => `/v1/query/${queryId}/execute`,
  classifySql: () => '/v1/sql/classify',
  classifyQuery: (queryId: number) => `/v1/query/${queryId}/classify`,
  status: (executionId: string) => `/v1/execution/${enc(executionId)}/status`,
  cancel: (executionId: string) => `/v1/execution/${enc(executionId)}/cancel`,
  results: (executionId: string) => `/v1/execution/${enc(executionId)}/results`,
  resultsCsv: (executionId: string) => `/v1/execution/${enc(executionId)}/results/csv`,
  latestResults: (queryId: number) => `/v1/query/${queryId}/results`,
  latestResultsCsv: (queryId: number) => `/v1/query/${queryId}/results/csv`,
  createQuery: () => '/v1/query',
  query: (queryId: number) => `/v1/query/${queryId}`,
  archiveQuery: (queryId: number) => `/v1/query/${queryId}/archive`,
  unarchiveQuery: (queryId: number) => `/v1/query/${queryId}/unarchive`,
  uploadCsv: () => '/v1/uploads/csv',
  queries: () => '/v1/queries',
  privateQuery: (queryId: number) => `/v1/query/${queryId}/private`,
  unprivateQuery: (queryId: number) => `/v1/query/${queryId}/unprivate`,
  uploads: () => '/v1/uploads',
  uploadTable: (namespace: string, table: string) => `/v1/uploads/${enc(namespace)}/${enc(table)}`,
  uploadInsert: (namespace: string, table: string) => `/v1/uploads/${enc(namespace)}/${enc(table)}/insert`,
  uploadClear: (namespace: string, table: string) => `/v1/uploads/${enc(namespace)}/${enc(table)}/clear`,
  datasets: () => '/v1/datasets',
  dataset: (fullName: string) => `/v1/datasets/${enc(fullName)}`,
  searchDatasets: () => '/v1/datasets/search',
  views: () => '/v1/materialized-views',
  view: (fullName: string) => `/v1/materialized-views/${enc(fullName)}`,
  refreshView: (name: string) => `/v1/materialized-views/${enc(name)}/refresh`,
  usage: () => '/v1/usage',
} as const;
