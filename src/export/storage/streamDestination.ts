import { DestinationError, type StreamSink } from '../../kit/index.ts';
import type { Destination } from '../destination.ts';

/** The commit API over a single stream: one write, no markers, nothing to take back. */
export function streamDestination(sink: StreamSink): Destination {
  let used = false;
  return {
    url: sink.url,
    multiFile: false,
    async read() {
      return undefined;
    },
    async begin() {
      return {
        async write(name, body, opts = {}) {
          if (used) throw new DestinationError(sink.url, `writing ${name} to`, new Error(`${sink.url} takes a single stream`));
          used = true;
          return { bytes: await sink.write(body, opts.signal) };
        },
        async commit() {},
        async abort() {},
      };
    },
    close: () => sink.close(),
  };
}
