import { defineCommand } from '../command.ts';
import { CONNECTION_OPTIONS } from '../connection.ts';
import { printRows, ROW_OUTPUT_OPTIONS } from './query.ts';

export const resultsCommand = defineCommand({
  name: 'results',
  summary: 'Print the result of an existing execution (table, CSV, NDJSON, Arrow) or write it to a file',
  args: 'EXECUTION_ID',
  minArgs: 1,
  options: { ...ROW_OUTPUT_OPTIONS, ...CONNECTION_OPTIONS },
  run: (ctx) => printRows(ctx, { executionId: ctx.positionals[0]! }),
});
