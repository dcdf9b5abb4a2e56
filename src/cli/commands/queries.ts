import { readFile } from 'node:fs/promises';
import { PARAMETER_TYPES, type QueryParameter } from '../../protocol/index.ts';
import { defineCommand, flag, listOption, stringOption, type OptionSpec, type OptionValues } from '../command.ts';
import { CONNECTION_OPTIONS } from '../connection.ts';
import { printAnswer } from '../printAnswer.ts';
import { UsageError } from '../usageError.ts';

const QUERY_FIELDS: Readonly<Record<string, OptionSpec>> = {
  name: { type: 'string', valueName: 'NAME', description: 'Query name' },
  sql: { type: 'string', valueName: 'SQL', description: 'SQL text; parameters as {{name}}' },
  'sql-file': { type: 'string', valueName: 'FILE', description: 'Read the SQL from this file' },
  description: { type: 'string', valueName: 'TEXT', description: 'Description' },
  param: { type: 'string', multiple: true, valueName: 'KEY:TYPE=DEFAULT', description: 'A parameter (text, number, datetime, enum), repeatable: --param day:datetime=2026-01-01' },
  tag: { type: 'string', multiple: true, valueName: 'TAG', description: 'A tag (repeatable)' },
  private: { type: 'boolean', description: 'Only the team sees it' },
};

async function queryFields(values: OptionValues, cwdRead: (path: string) => Promise<string>) {
  const sqlFile = stringOption(values, 'sql-file');
  const sql = sqlFile !== undefined ? await cwdRead(sqlFile) : stringOption(values, 'sql');
  const params = listOption(values, 'param').map(parseParam);
  const tags = listOption(values, 'tag');
  return {
    ...(stringOption(values, 'name') === undefined ? {} : { name: stringOption(values, 'name')! }),
    ...(sql === undefined ? {} : { query_sql: sql }),
    ...(stringOption(values, 'description') === undefined ? {} : { description: stringOption(values, 'description')! }),
    ...(params.length > 0 ? { parameters: params } : {}),
    ...(tags.length > 0 ? { tags } : {}),
    ...(flag(values, 'private') ? { is_private: true } : {}),
  };
}

/** `day:datetime=2026-01-01 00:00:00` -> {key: day, type: datetime, value: ...}; numbers typed as numbers. */
export function parseParam(text: string): QueryParameter {
  const match = /^([A-Za-z_][A-Za-z0-9_]*):([a-z]+)=(.*)$/s.exec(text);
  if (!match) throw new UsageError(`--param must look like KEY:TYPE=DEFAULT (e.g. n:number=10), got ${JSON.stringify(text)}`);
  const [, key, type, raw] = match as unknown as [string, string, string, string];
  if (!(PARAMETER_TYPES as readonly string[]).includes(type)) throw new UsageError(`--param ${key}: type must be one of ${PARAMETER_TYPES.join(', ')}, got ${JSON.stringify(type)}`);
  const value = type === 'number' ? Number(raw) : raw;
  if (typeof value === 'number' && !Number.isFinite(value)) throw new UsageError(`--param ${key}: ${JSON.stringify(raw)} is not a number`);
  return { key, type: type as QueryParameter['type'], value };
}

function queryId(positionals: readonly string[]): number {
  const id = Number(positionals[0]);
  if (!Number.isInteger(id) || id < 1) throw new UsageError(`QUERY_ID must be a positive whole number, got ${JSON.stringify(positionals[0])}`);
  return id;
}

export const queriesCreateCommand = defineCommand({
  name: 'queries create',
  summary: 'Save a query (prints its query_id)',
  options: { ...QUERY_FIELDS, ...CONNECTION_OPTIONS },
  async run({ io, values, log, signal }) {
    const fields = await queryFields(values, (p) => readFile(p, 'utf8'));
    if (fields.name === undefined || fields.query_sql === undefined) throw new UsageError('--name and --sql (or --sql-file) are required');
    return printAnswer(values, io, log, signal, ({ client }) => client.createQuery({ ...fields, name: fields.name!, query_sql: fields.query_sql! }, { signal }));
  },
});

export const queriesGetCommand = defineCommand({
  name: 'queries get',
  summary: 'Print a saved query as JSON',
  args: 'QUERY_ID',
  minArgs: 1,
  options: { ...CONNECTION_OPTIONS },
  async run({ io, values, positionals, log, signal }) {
    const id = queryId(positionals);
    return printAnswer(values, io, log, signal, ({ client }) => client.getQuery(id, { signal }));
  },
});

export const queriesUpdateCommand = defineCommand({
  name: 'queries update',
  summary: 'Change fields of a saved query (only the options given)',
  args: 'QUERY_ID',
  minArgs: 1,
  options: { ...QUERY_FIELDS, ...CONNECTION_OPTIONS },
  async run({ io, values, positionals, log, signal }) {
    const id = queryId(positionals);
    const fields = await queryFields(values, (p) => readFile(p, 'utf8'));
    if (Object.keys(fields).length === 0) throw new UsageError('nothing to update: give at least one of --name, --sql, --sql-file, --description, --param, --tag, --private');
    return printAnswer(values, io, log, signal, ({ client }) => client.updateQuery(id, fields, { signal }));
  },
});

export const queriesArchiveCommand = defineCommand({
  name: 'queries archive',
  summary: 'Archive a saved query (it can no longer be executed); --undo unarchives',
  args: 'QUERY_ID',
  minArgs: 1,
  options: { undo: { type: 'boolean', description: 'Unarchive instead' }, ...CONNECTION_OPTIONS },
  async run({ io, values, positionals, log, signal }) {
    const id = queryId(positionals);
    return printAnswer(values, io, log, signal, ({ client }) => (flag(values, 'undo') ? client.unarchiveQuery(id, { signal }) : client.archiveQuery(id, { signal })));
  },
});
