import type { Writable } from 'node:stream';
import { once } from 'node:events';
import { z } from 'zod';
import { defineSink, type Destination, DestinationError } from '../../../src/kit/index.ts';

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
  create: () => streamDestination(process.stdout),
});

export function streamDestination(out: Writable): Destination {
  let used = false;
  return {
    url: 'stdout:',
    multiFile: false,
    async read() {
      return undefined;
    },
    async begin() {
      return {
        async write(name, body, opts = {}) {
          if (used) throw new DestinationError('stdout:', `writing ${name} to`, new Error('stdout takes a single stream'));
          used = true;
          let bytes = 0;
          for await (const chunk of body) {
            opts.signal?.throwIfAborted();
            bytes += chunk.byteLength;
            if (!out.write(chunk)) await once(out, 'drain', opts.signal ? { signal: opts.signal } : {});
          }
          return { bytes };
        },
        async commit() {},
        async abort() {},
      };
    },
    async close() {},
  };
}
