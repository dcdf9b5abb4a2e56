import { DATASET_TYPES } from '../../protocol/index.ts';
import { defineCommand, flag, stringOption, type OptionValues } from '../command.ts';
import { CONNECTION_OPTIONS } from '../connection.ts';
import { printAnswer } from '../printAnswer.ts';
import { UsageError } from '../usageError.ts';
import { pageOptions } from './uploadTables.ts';

const PAGE = {
  limit: { type: 'string', valueName: 'N', description: 'At most N datasets' },
  offset: { type: 'string', valueName: 'N', description: 'Skip N datasets' },
} as const;

function datasetType(values: OptionValues): string | undefined {
  const type = stringOption(values, 'type');
  if (type !== undefined && !(DATASET_TYPES as readonly string[]).includes(type)) throw new UsageError(`--type must be one of ${DATASET_TYPES.join(', ')}, got ${JSON.stringify(type)}`);
  return type;
}

export const datasetsListCommand = defineCommand({
  name: 'datasets list',
  summary: 'List the datasets the key can see (its team\'s tables and other teams\' public ones)',
  options: {
    owner: { type: 'string', valueName: 'HANDLE', description: 'Only those of this owner (a team)' },
    type: { type: 'string', valueName: 'TYPE', description: `Only this type: ${DATASET_TYPES.join(', ')}` },
    ...PAGE,
    ...CONNECTION_OPTIONS,
  },
  async run({ io, values, log, signal }) {
    const type = datasetType(values);
    const owner = stringOption(values, 'owner');
    const paging = pageOptions(stringOption(values, 'limit'), stringOption(values, 'offset'));
    return printAnswer(values, io, log, signal, ({ client }) =>
      client.catalog.listDatasets({ ...paging, ...(owner === undefined ? {} : { ownerHandle: owner }), ...(type === undefined ? {} : { type }), signal }),
    );
  },
});

export const datasetsSearchCommand = defineCommand({
  name: 'datasets search',
  summary: 'Search datasets by words of their name or description',
  args: '[WORDS...]',
  maxArgs: 100,
  options: {
    type: { type: 'string', valueName: 'TYPE', description: `Only this type: ${DATASET_TYPES.join(', ')}` },
    mine: { type: 'boolean', description: "Only the team's own" },
    schema: { type: 'boolean', description: 'Include each dataset\'s columns' },
    ...PAGE,
    ...CONNECTION_OPTIONS,
  },
  async run({ io, values, positionals, log, signal }) {
    const type = datasetType(values);
    const paging = pageOptions(stringOption(values, 'limit'), stringOption(values, 'offset'));
    const query = positionals.join(' ');
    return printAnswer(values, io, log, signal, ({ client }) =>
      client.catalog.searchDatasets(
        {
          ...(query === '' ? {} : { query }),
          ...(type === undefined ? {} : { dataset_types: [type as (typeof DATASET_TYPES)[number]] }),
          ...(flag(values, 'mine') ? { owner_scope: 'team' as const } : {}),
          ...(flag(values, 'schema') ? { include_schema: true } : {}),
          ...paging,
        },
        { signal },
      ),
    );
  },
});
