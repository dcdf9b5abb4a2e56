import { defineCommand } from '../command.ts';
import { CONNECTION_OPTIONS } from '../connection.ts';
import { printAnswer } from '../printAnswer.ts';

export const statusCommand = defineCommand({
  name: 'status',
  summary: 'Print the status of an execution as JSON',
  args: 'EXECUTION_ID',
  minArgs: 1,
  options: { ...CONNECTION_OPTIONS },
  async run({ io, values, positionals, log, signal }) {
    return printAnswer(values, io, log, signal, ({ client }) => client.getStatus(positionals[0]!, { signal }));
  },
});

export const cancelCommand = defineCommand({
  name: 'cancel',
  summary: 'Cancel a pending or running execution',
  args: 'EXECUTION_ID',
  minArgs: 1,
  options: { ...CONNECTION_OPTIONS },
  async run({ io, values, positionals, log, signal }) {
    return printAnswer(values, io, log, signal, async ({ client }) => {
      const id = positionals[0]!;
      const accepted = await client.cancel(id, { signal });
      const status = await client.getStatus(id, { signal });
      return { execution_id: id, cancelled: accepted, state: status.state };
    });
  },
});
