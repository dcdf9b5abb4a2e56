import type { OptionValues } from './command.ts';
import { withConnection } from './connection.ts';
import { EXIT } from './exitCodes.ts';
import { writeOut, type CliIo } from './io.ts';
import type { Logger } from './log.ts';
import type { Connected } from '../jobs/run/connect.ts';
import { toJson } from './output/json.ts';

/** The shape of most service commands: connect, ask one thing, print the answer as JSON, exit 0. */
export async function printAnswer(values: OptionValues, io: CliIo, log: Logger, signal: AbortSignal, ask: (c: Connected) => Promise<unknown>): Promise<number> {
  return withConnection(values, io, log, signal, async (connection) => {
    await writeOut(io.stdout, toJson(await ask(connection)));
    return EXIT.ok;
  });
}
