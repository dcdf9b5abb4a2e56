/** Error messages fixed by protocol.md; client and service both refer to these. */
export const MESSAGES = {
  invalidKey: 'Invalid API Key',
  notFound: 'Object not found',
  queryNotFound: 'Query not found',
  internal: 'Internal error',
  badRequest: 'Bad Request',
  tooManyRequests: 'Too many requests',
  billingLimit: 'This API request would exceed your configured limits per billing cycle.',
  partialResult: "Partial Result, please request with 'allow_partial_results=true'",
  noLatestResult: 'not found: No execution found for the latest version of the given query',
  invalidExecutionId: (id: string) => `The requested execution ID (ID: ${id}) is invalid.`,
  unknownParameters: (names: string[]) => `unknown parameters (${names.join(', ')})`,
  missingScope: (scope: string) => `Not allowed: this API key lacks the ${scope} scope`,
  csvNotReady: (state: string) => `Query state is ${state}, cannot provide CSV result`,
} as const;

/** The error type of a failed execution (service-interface.md 2.3). */
export const FAILED_TYPE_EXECUTION_FAILED = 'FAILED_TYPE_EXECUTION_FAILED';

/** Response headers that page CSV results (protocol.md section 4). */
export const CSV_NEXT_OFFSET_HEADER = 'x-service-next-offset';
export const CSV_NEXT_URI_HEADER = 'x-service-next-uri';
