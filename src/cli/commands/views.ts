import { PERFORMANCE_TIERS, type Performance } from '../../protocol/index.ts';
import { defineCommand, flag, stringOption, type OptionValues } from '../command.ts';
import { CONNECTION_OPTIONS, withConnection } from '../connection.ts';
import { EXIT } from '../exitCodes.ts';
import { writeOut } from '../io.ts';
import { toJson } from '../output/json.ts';
import { renderTable } from '../output/table.ts';
import { printAnswer } from '../printAnswer.ts';
import { UsageError } from '../usageError.ts';
import type { Logger } from '../log.ts';
import type { Connected } from '../../jobs/run/connect.ts';

const WAIT_OPTION = { type: 'boolean', description: 'Wait until the refresh finished; its failure is exit code 5 (always, on the embedded service)' } as const;
const EMBEDDED_WAITS =
  'Without --base-url (the embedded local service) the command always waits for the refresh: that\nservice stops when the command ends, and a refresh still running would fail.';

const JSON_OPTION = { json: { type: 'boolean' as const, description: 'Print JSON instead of a table' } };

export const viewsListCommand = defineCommand({
  name: 'views list',
  summary: 'List the materialized views of the team',
  options: {
    limit: { type: 'string', valueName: 'N', description: 'At most N views (at most 10000; the rest: --offset)' },
    offset: { type: 'string', valueName: 'N', description: 'Skip this many views' },
    ...JSON_OPTION,
    ...CONNECTION_OPTIONS,
  },
  async run({ io, values, log, signal }) {
    return withConnection(values, io, log, signal, async ({ client }) => {
      const limit = intOption(values, 'limit');
      const offset = intOption(values, 'offset');
      const list = await client.listViews({ signal, ...(limit === undefined ? {} : { limit }), ...(offset === undefined ? {} : { offset }) });
      if (flag(values, 'json')) {
        await writeOut(io.stdout, toJson(list));
      } else {
        const rows = list.materialized_views.map((v) => ({ name: v.name, query_id: v.query_id, cron: v.cron_expression ?? '', performance: v.performance, bytes: v.table_size_bytes, updated_at: v.updated_at }));
        await writeOut(io.stdout, renderTable(['name', 'query_id', 'cron', 'performance', 'bytes', 'updated_at'], rows, 60));
        if (list.next_offset !== undefined) await writeOut(io.stdout, `(more: --offset ${list.next_offset})\n`);
      }
      return EXIT.ok;
    });
  },
});

export const viewsGetCommand = defineCommand({
  name: 'views get',
  summary: 'Print one materialized view as JSON',
  args: 'FULL_NAME',
  minArgs: 1,
  options: { ...CONNECTION_OPTIONS },
  async run({ io, values, positionals, log, signal }) {
    return printAnswer(values, io, log, signal, ({ client }) => client.getView(positionals[0]!, { signal }));
  },
});

export const viewsUpsertCommand = defineCommand({
  name: 'views upsert',
  summary: "Create a materialized view of a saved query's result, or update the query's view",
  args: 'NAME',
  minArgs: 1,
  options: {
    'query-id': { type: 'string', valueName: 'ID', description: 'The saved query (required)' },
    cron: { type: 'string', valueName: 'EXPR', description: 'Refresh schedule, five-field cron (every 15 minutes at most)' },
    performance: { type: 'string', valueName: 'TIER', description: PERFORMANCE_TIERS.join(', ') },
    private: { type: 'boolean', description: 'Only the team sees it' },
    wait: WAIT_OPTION,
    ...CONNECTION_OPTIONS,
  },
  details: `NAME is result_<x>; the view becomes the table service.<team>.result_<x>.\n${EMBEDDED_WAITS}`,
  async run({ io, values, positionals, log, signal }) {
    const queryId = intOption(values, 'query-id');
    if (queryId === undefined) throw new UsageError('--query-id is required');
    const performance = performanceOption(values);
    return printAnswer(values, io, log, signal, async (connection) => {
      const res = await connection.client.upsertView(
        {
          name: positionals[0]!,
          query_id: queryId,
          ...(stringOption(values, 'cron') === undefined ? {} : { cron_expression: stringOption(values, 'cron')! }),
          ...(performance === undefined ? {} : { performance }),
          ...(flag(values, 'private') ? { is_private: true } : {}),
        },
        { signal },
      );
      return withOutcome(res, connection, flag(values, 'wait'), log, signal);
    });
  },
});

export const viewsDeleteCommand = defineCommand({
  name: 'views delete',
  summary: 'Delete a materialized view',
  args: 'FULL_NAME',
  minArgs: 1,
  options: { ...CONNECTION_OPTIONS },
  async run({ io, values, positionals, log, signal }) {
    return printAnswer(values, io, log, signal, ({ client }) => client.deleteView(positionals[0]!, { signal }));
  },
});

export const viewsRefreshCommand = defineCommand({
  name: 'views refresh',
  summary: 'Refresh a materialized view now (prints the execution id; --wait waits for it)',
  args: 'NAME',
  minArgs: 1,
  options: {
    performance: { type: 'string', valueName: 'TIER', description: PERFORMANCE_TIERS.join(', ') },
    wait: WAIT_OPTION,
    ...CONNECTION_OPTIONS,
  },
  details: EMBEDDED_WAITS,
  async run({ io, values, positionals, log, signal }) {
    const performance = performanceOption(values);
    return printAnswer(values, io, log, signal, async (connection) => {
      const res = await connection.client.refreshView(positionals[0]!, { signal, ...(performance === undefined ? {} : { performance }) });
      return withOutcome(res, connection, flag(values, 'wait'), log, signal);
    });
  },
});

/**
 * The answer of a call that started a refresh, with the refresh's final state when it was waited
 * for. On the embedded service it always is: that service runs inside this command and stops with
 * it, and a refresh still running then ends FAILED ("The service restarted"), so not waiting would
 * print an execution id that can never succeed.
 */
async function withOutcome<T extends { execution_id: string }>(res: T, connection: Connected, wait: boolean, log: Logger, signal: AbortSignal): Promise<T & { state?: string }> {
  if (!wait && !connection.embedded) return res;
  if (!wait) log.info('waiting for the refresh: the embedded local service stops when this command ends', { execution_id: res.execution_id });
  const status = await connection.client.execution(res.execution_id).wait({ signal });
  return { ...res, state: status.state };
}

export function intOption(values: OptionValues, name: string): number | undefined {
  const text = stringOption(values, name);
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0) throw new UsageError(`--${name} must be a whole number, got ${JSON.stringify(text)}`);
  return n;
}

export function performanceOption(values: OptionValues): Performance | undefined {
  const p = stringOption(values, 'performance');
  if (p === undefined) return undefined;
  if (!(PERFORMANCE_TIERS as readonly string[]).includes(p)) throw new UsageError(`--performance must be one of ${PERFORMANCE_TIERS.join(', ')}, got ${JSON.stringify(p)}`);
  return p as Performance;
}
