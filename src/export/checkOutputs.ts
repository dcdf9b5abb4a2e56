import { checkOutput, openOutput } from './openOutput.ts';
import type { ResolvedOutput } from './outputConfig.ts';

/** Checks every output's destination (see `checkOutput`), opening and closing each: for callers that hold no opened outputs. */
export async function checkOutputs(outputs: readonly ResolvedOutput[], signal: AbortSignal): Promise<void> {
  for (const output of outputs) {
    const opened = openOutput(output);
    try {
      await checkOutput(opened, signal);
    } finally {
      await opened.destination.close();
    }
  }
}
