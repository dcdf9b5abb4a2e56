/**
 * sluice as a library: the client of the query service, typed streaming of results, the column
 * type system, and the export writer with its formats and destinations.
 *
 * ```ts
 * import { ServiceClient, stream } from 'sluice';
 * const client = new ServiceClient();            // SERVICE_API_KEY, SERVICE_BASE_URL
 * for await (const row of stream(client, { sql: 'SELECT * FROM sample.events' })) { ... }
 * ```
 * The local query service is exported separately: `import { startService } from 'sluice/service'`.
 */
export { ConfigError, SluiceError, type ConfigErrorOptions, type ConfigIssue, type SluiceErrorOptions } from './errors.ts';
// The errors connectors throw, so a library user can branch on them without importing src/kit.
export { DestinationCheckError, DestinationError, FormatError, KitError } from './kit/index.ts';
export * from './client/index.ts';
export * from './pipeline/index.ts';
export * from './types/index.ts';
// The client and the types both name a Row: the same typed row.
export type { Row } from './types/index.ts';
export * from './export/index.ts';
export * as protocol from './protocol/index.ts';
export { defineFormat, defineSink, redact, type FormatDescriptor, type Registry, type SinkDescriptor } from './kit/index.ts';
// The composition root of the library: the built-in connectors, to hand to `resolveOutput`.
export { builtins, formats, sinks } from '../connectors/index.ts';
