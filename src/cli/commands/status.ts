import { defineCommand } from '../command.ts';
import { CONNECTION_OPTIONS, withConnection } from '../connection.ts';
import { EXIT } from '../exit-codes.ts';
import { writeOut } from '../io.ts';
import { toJson } from '../output/json.ts';

export const statusCommand = defineCommand({
  name: 'status',
  summary: 'Print the status of an execution as JSON',
  args: 'EXECUTION_ID',
  minArgs: 1,
  options: { ...CONNECTION_OPTIONS },
  async run({ io, values, positionals, log, signal }) {
    return withConnection(values, io, log, async ({ client }) => {
      const status = await client.getStatus(positionals[0]!, { signal });
      await writeOut(io.stdout, toJson(status));
      return EXIT.ok;
    });
  },
});

export const cancelCommand = defineCommand({
  name: 'cancel',
  summary: 'Cancel a pending or running execution',
  args: 'EXECUTION_ID',
  minArgs: 1,
  options: { ...CONNECTION_OPTIONS },
  async run({ io, values, positionals, log, signal }) {
    return withConnection(values, io, log, async ({ client }) => {
      const id = positionals[0]!;
      const accepted = await client.cancel(id, { signal });
      const status = await client.getStatus(id, { signal });
      await writeOut(io.stdout, toJson({ execution_id: id, cancelled: accepted, state: status.state }));
      return EXIT.ok;
    });
  },
});
