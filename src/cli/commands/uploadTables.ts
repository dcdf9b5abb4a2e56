// `sluice upload create|insert|clear|delete|list`: tables created with a schema and filled from
// CSV or NDJSON files (the uploads API beside the one-shot `sluice upload FILE`).
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { buffer as streamBuffer } from 'node:stream/consumers';
import { UPLOAD_COLUMN_TYPES, type UploadColumnType } from '../../protocol/index.ts';
import type { ServiceClient } from '../../client/serviceClient.ts';
import { defineCommand, flag, listOption, stringOption } from '../command.ts';
import { CONNECTION_OPTIONS } from '../connection.ts';
import { printAnswer } from '../printAnswer.ts';
import { UsageError } from '../usageError.ts';

/** `TEAM.TABLE` (or `service.TEAM.TABLE`, as the create call prints it) -> namespace and table. */
export function tableRef(text: string | undefined): { namespace: string; table: string } {
  const parts = (text ?? '').split('.');
  const [namespace, table] = parts.length === 3 && parts[0] === 'service' ? parts.slice(1) : parts;
  if (parts.length > 3 || parts.length < 2 || !namespace || !table || (parts.length === 3 && parts[0] !== 'service')) {
    throw new UsageError(`TABLE must be TEAM.TABLE (or service.TEAM.TABLE), got ${JSON.stringify(text ?? '')}`);
  }
  return { namespace, table };
}

/** `name:type` or `name:type!` (not nullable) -> a column of the schema. */
export function parseColumn(text: string): { name: string; type: UploadColumnType; nullable: boolean } {
  const match = /^([^:]+):([a-z0-9]+)(!?)$/i.exec(text);
  const type = match?.[2]?.toLowerCase();
  if (!match || !(UPLOAD_COLUMN_TYPES as readonly string[]).includes(type ?? '')) {
    throw new UsageError(`--column must be NAME:TYPE or NAME:TYPE! (not null), TYPE one of ${UPLOAD_COLUMN_TYPES.join(', ')}; got ${JSON.stringify(text)}`);
  }
  return { name: match[1]!, type: type as UploadColumnType, nullable: match[3] !== '!' };
}

export const uploadCreateCommand = defineCommand({
  name: 'upload create',
  summary: 'Create an empty table service.TEAM.TABLE of the given columns (10 credits)',
  args: 'TEAM.TABLE',
  minArgs: 1,
  maxArgs: 1,
  options: {
    column: { type: 'string', multiple: true, valueName: 'NAME:TYPE[!]', description: `A column, in order (repeatable); ! = not null. TYPE: ${UPLOAD_COLUMN_TYPES.join(', ')}` },
    description: { type: 'string', valueName: 'TEXT', description: 'Description' },
    private: { type: 'boolean', description: 'Only the team sees it' },
    ...CONNECTION_OPTIONS,
  },
  async run({ io, values, positionals, log, signal }) {
    const { namespace, table } = tableRef(positionals[0]);
    const schema = listOption(values, 'column').map(parseColumn);
    if (schema.length === 0) throw new UsageError('give the columns: --column NAME:TYPE (repeatable)');
    const description = stringOption(values, 'description');
    return printAnswer(values, io, log, signal, ({ client }) =>
      client.catalog.createTable(
        { namespace, table_name: table, schema, ...(description === undefined ? {} : { description }), ...(flag(values, 'private') ? { is_private: true } : {}) },
        { signal },
      ),
    );
  },
});

export const uploadInsertCommand = defineCommand({
  name: 'upload insert',
  summary: 'Append the rows of a CSV (header first) or NDJSON file to a table, all or none; FILE "-" reads stdin',
  args: 'TEAM.TABLE FILE',
  minArgs: 2,
  maxArgs: 2,
  options: {
    format: { type: 'string', valueName: 'csv|ndjson', description: 'The file\'s format (default: ndjson for .ndjson/.jsonl files, else csv)' },
    ...CONNECTION_OPTIONS,
  },
  async run({ io, values, positionals, log, signal }) {
    const { namespace, table } = tableRef(positionals[0]);
    const file = positionals[1]!;
    const given = stringOption(values, 'format');
    if (given !== undefined && given !== 'csv' && given !== 'ndjson') throw new UsageError(`--format must be csv or ndjson, got ${JSON.stringify(given)}`);
    const format = given ?? (/\.(ndjson|jsonl)$/i.test(file) ? 'ndjson' : 'csv');
    // The endpoint takes the rows as one body: the file is read whole (the service's body limit bounds it).
    const data = file === '-' ? await streamBuffer(io.stdin) : await readFile(resolve(io.cwd, file));
    return printAnswer(values, io, log, signal, ({ client }) => client.catalog.insertRows(namespace, table, data, format, { signal }));
  },
});

export const uploadClearCommand = tableCommand('upload clear', 'Remove every row of a table, keeping the table', (catalog, ns, table, signal) => catalog.clearTable(ns, table, { signal }));

export const uploadDeleteCommand = tableCommand('upload delete', 'Delete a table (created or uploaded)', (catalog, ns, table, signal) => catalog.deleteTable(ns, table, { signal }));

/** A command on one table, TEAM.TABLE, printing the service's answer. */
function tableCommand(name: string, summary: string, call: (catalog: ServiceClient['catalog'], namespace: string, table: string, signal: AbortSignal) => Promise<unknown>) {
  return defineCommand({
    name,
    summary,
    args: 'TEAM.TABLE',
    minArgs: 1,
    maxArgs: 1,
    options: { ...CONNECTION_OPTIONS },
    async run({ io, values, positionals, log, signal }) {
      const { namespace, table } = tableRef(positionals[0]);
      return printAnswer(values, io, log, signal, ({ client }) => call(client.catalog, namespace, table, signal));
    },
  });
}

export const uploadListCommand = defineCommand({
  name: 'upload list',
  summary: "List the team's tables (created and uploaded)",
  options: {
    limit: { type: 'string', valueName: 'N', description: 'At most N tables' },
    offset: { type: 'string', valueName: 'N', description: 'Skip N tables' },
    ...CONNECTION_OPTIONS,
  },
  async run({ io, values, log, signal }) {
    const paging = pageOptions(stringOption(values, 'limit'), stringOption(values, 'offset'));
    return printAnswer(values, io, log, signal, ({ client }) => client.catalog.listTables({ ...paging, signal }));
  },
});

/** `--limit` / `--offset` as numbers (usage error otherwise). */
export function pageOptions(limit: string | undefined, offset: string | undefined): { limit?: number; offset?: number } {
  const num = (name: string, v: string | undefined, min: number): number | undefined => {
    if (v === undefined) return undefined;
    if (!/^\d+$/.test(v) || Number(v) < min) throw new UsageError(`--${name} must be a whole number of at least ${min}, got ${JSON.stringify(v)}`);
    return Number(v);
  };
  const l = num('limit', limit, 1);
  const o = num('offset', offset, 0);
  return { ...(l === undefined ? {} : { limit: l }), ...(o === undefined ? {} : { offset: o }) };
}
