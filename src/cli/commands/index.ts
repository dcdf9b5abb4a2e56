import type { Command } from '../command.ts';
import { dispatch, type RunCliOptions } from '../dispatch.ts';
import { mcpCommand } from './mcp.ts';
import { queriesArchiveCommand, queriesCreateCommand, queriesGetCommand, queriesUpdateCommand } from './queries.ts';
import { queryCommand } from './query.ts';
import { resultsCommand } from './results.ts';
import { runCommand } from './run.ts';
import { runsCommand } from './runs.ts';
import { scheduleCommand } from './schedule.ts';
import { SERVE_OPTIONS, SERVE_SUMMARY } from './serveOptions.ts';
import { schemaCommand } from './schema.ts';
import { cancelCommand, statusCommand } from './status.ts';
import { uploadCommand } from './upload.ts';
import { uploadClearCommand, uploadCreateCommand, uploadDeleteCommand, uploadInsertCommand, uploadListCommand } from './uploadTables.ts';
import { datasetsListCommand, datasetsSearchCommand } from './datasets.ts';
import { usageCommand } from './usage.ts';
import { validateCommand } from './validate.ts';
import { viewsDeleteCommand, viewsGetCommand, viewsListCommand, viewsRefreshCommand, viewsUpsertCommand } from './views.ts';

/**
 * `serve` parses its own arguments (it belongs to the service); it is listed here like any other,
 * but loaded only when run: the service brings DuckDB, which no other command needs at start.
 */
const runServe = async (argv: string[]): Promise<number> => (await import('./serve.ts')).serveCommand.run(argv);
const serve: Command = {
  name: 'serve',
  summary: SERVE_SUMMARY,
  options: SERVE_OPTIONS,
  passthrough: (argv) => runServe(argv),
  run: () => runServe([]),
};

/** Every command of the CLI, in the order `sluice --help` lists them. */
export const COMMANDS: readonly Command[] = [
  runCommand,
  validateCommand,
  schemaCommand,
  scheduleCommand,
  runsCommand,
  usageCommand,
  queryCommand,
  statusCommand,
  cancelCommand,
  resultsCommand,
  viewsListCommand,
  viewsGetCommand,
  viewsUpsertCommand,
  viewsDeleteCommand,
  viewsRefreshCommand,
  queriesCreateCommand,
  queriesGetCommand,
  queriesUpdateCommand,
  queriesArchiveCommand,
  uploadCommand,
  uploadCreateCommand,
  uploadInsertCommand,
  uploadClearCommand,
  uploadDeleteCommand,
  uploadListCommand,
  datasetsListCommand,
  datasetsSearchCommand,
  mcpCommand,
  serve,
];

/** The CLI: `argv` without the node and script paths; resolves to the exit code (src/cli/exitCodes.ts). */
export function runCli(argv: readonly string[], options: RunCliOptions = {}): Promise<number> {
  return dispatch(COMMANDS, argv, options);
}
