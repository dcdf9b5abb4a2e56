import type { Clock } from './clock.ts';
import type { SqlEngine } from './engine/types.ts';
import type { Executions } from './executions.ts';
import type { SavedQueries } from './savedQueries.ts';
import type { ServiceSettings } from './settings.ts';

/** What route handlers work with: one instance per running service. */
export interface ServiceContext {
  settings: ServiceSettings;
  clock: Clock;
  engine: SqlEngine;
  executions: Executions;
  queries: SavedQueries;
}
