import { ResultParamsSchema, type ParameterValue, type ResultOptions } from '../protocol/index.ts';
import { InvalidArgumentError } from './errors.ts';
import { describeIssues } from './http.ts';

const PLAIN_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A column name as the `columns` parameter wants it: special characters mean double quotes. */
export function quoteColumn(name: string): string {
  return PLAIN_NAME.test(name) ? name : `"${name.replaceAll('"', '""')}"`;
}

/**
 * ResultOptions (camelCase) to the results endpoints' query parameters, checked against the same
 * schema the service parses them with, so a bad option fails here, naming the option, before any request.
 */
export function resultParams(
  operation: string,
  options: ResultOptions = {},
  parameters?: Record<string, ParameterValue>,
): Record<string, string | undefined> {
  const params: Record<string, string | undefined> = {
    limit: str(options.limit),
    offset: str(options.offset),
    columns: options.columns?.map(quoteColumn).join(','),
    filters: options.filters,
    sort_by: options.sortBy,
    sample_count: str(options.sampleCount),
    allow_partial_results: options.allowPartialResults ? 'true' : undefined,
    ignore_max_datapoints_per_request: options.ignoreMaxDatapointsPerRequest ? 'true' : undefined,
  };
  const defined = Object.fromEntries(Object.entries(params).filter(([, v]) => v !== undefined));
  const checked = ResultParamsSchema.safeParse(defined);
  if (!checked.success) {
    throw new InvalidArgumentError(`invalid result options: ${describeIssues(checked.error).replaceAll('sort_by', 'sortBy').replaceAll('sample_count', 'sampleCount')}`, {
      method: operation,
    });
  }
  for (const [name, value] of Object.entries(parameters ?? {})) params[`params.${name}`] = String(value);
  return params;
}

function str(n: number | undefined): string | undefined {
  return n === undefined ? undefined : String(n);
}
