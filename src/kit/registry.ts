import type { SinkDescriptor } from './sink.ts';
import type { FormatDescriptor } from './format.ts';

/**
 * The formats and sinks an output may name. Built by the composition roots (the CLI, the package
 * entry point) from the built-in connectors, or by a library user with connectors of their own, and handed
 * to whatever validates or writes outputs: nothing below the roots imports a connector.
 */
export interface Registry {
  readonly formats: readonly FormatDescriptor[];
  readonly sinks: readonly SinkDescriptor[];
}
