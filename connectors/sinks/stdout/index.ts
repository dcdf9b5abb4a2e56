import type { Writable } from 'node:stream';
import { once } from 'node:events';
import { z } from 'zod';
import { defineSink, type StreamSink } from '../../../src/kit/index.ts';

export const stdoutConfig = z.strictObject({
  url: z.literal('-').describe('"-" writes the single output stream to standard output.'),
});
export type StdoutConfig = z.output<typeof stdoutConfig>;

/**
 * Standard output: one stream, no files, no markers. Nothing can be taken back once written, so
 * this sink is not atomic; a failed run leaves a truncated stream and a failing exit code.
 */
export const stdout = defineSink({
  type: 'stdout',
  description: 'Standard output, for piping one stream into another tool.',
  paths: '- (standard output)',
  config: stdoutConfig,
  multiFile: false,
  accepts: (url) => url === '-',
  create: () => streamSink(process.stdout),
});

/** One stream into `out`, written as it comes (waiting for `drain`). */
export function streamSink(out: Writable): StreamSink {
  return {
    url: 'stdout:',
    stream: true,
    async write(body, signal) {
      let bytes = 0;
      for await (const chunk of body) {
        signal?.throwIfAborted();
        bytes += chunk.byteLength;
        if (!out.write(chunk)) await once(out, 'drain', signal ? { signal } : {});
      }
      return bytes;
    },
    async close() {},
  };
}
