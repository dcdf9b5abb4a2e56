import { isStreamSink, type Sink, type SinkDescriptor } from '../../kit/index.ts';
import type { Destination } from '../destination.ts';
import { storeDestination } from './storeDestination.ts';
import { streamDestination } from './streamDestination.ts';

/** The commit API over what a sink makes: an object store, or a single stream. */
export function destinationOf(sink: Sink): Destination {
  return isStreamSink(sink) ? streamDestination(sink) : storeDestination(sink);
}

/** Creates the sink of an output (its descriptor and config) and opens the commit API over it. */
export function openDestination(output: { readonly sink: SinkDescriptor; readonly sinkConfig: unknown }): Destination {
  return destinationOf(output.sink.create(output.sinkConfig as never));
}
