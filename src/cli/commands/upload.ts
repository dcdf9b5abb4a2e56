import { readFile } from 'node:fs/promises';
import { text as streamText } from 'node:stream/consumers';
import { defineCommand, flag, stringOption } from '../command.ts';
import { CONNECTION_OPTIONS } from '../connection.ts';
import { printAnswer } from '../printAnswer.ts';
import { UsageError } from '../usageError.ts';

export const uploadCommand = defineCommand({
  name: 'upload',
  summary: 'Upload a CSV file as a table (service.<team>.dataset_<table>); FILE "-" reads stdin',
  args: 'FILE',
  minArgs: 1,
  options: {
    table: { type: 'string', short: 't', valueName: 'NAME', description: 'Table name: a-z, 0-9 and _ (required)' },
    description: { type: 'string', valueName: 'TEXT', description: 'Description' },
    private: { type: 'boolean', description: 'Only the team sees it' },
    ...CONNECTION_OPTIONS,
  },
  async run({ io, values, positionals, log, signal }) {
    const table = stringOption(values, 'table');
    if (table === undefined) throw new UsageError('--table is required');
    const file = positionals[0]!;
    // The endpoint takes the CSV as one JSON string: the file is read whole (uploads are small tables).
    const data = file === '-' ? await streamText(io.stdin) : await readFile(file, 'utf8');
    return printAnswer(values, io, log, signal, ({ client }) =>
      client.uploadCsv(
        {
          table_name: table,
          data,
          ...(stringOption(values, 'description') === undefined ? {} : { description: stringOption(values, 'description')! }),
          ...(flag(values, 'private') ? { is_private: true } : {}),
        },
        { signal },
      ),
    );
  },
});
