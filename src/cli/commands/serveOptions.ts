import type { OptionSpec } from '../command.ts';
import { DEFAULT_EMBEDDED_DATA_DIR } from '../../config/jobSchema.ts';

/**
 * The options of `sluice serve`, apart from the command itself (which loads DuckDB): `--help`
 * prints them as every command's help does, and serve parses its arguments with them.
 */
export const SERVE_OPTIONS = {
  host: { type: 'string', valueName: 'HOST', description: 'Interface to bind (0.0.0.0: every interface)', default: '127.0.0.1' },
  port: { type: 'string', valueName: 'PORT', description: 'Port; 0 picks a free one', default: '8080' },
  'data-dir': {
    type: 'string',
    valueName: 'DIR',
    description: "Where queries, executions and results are kept (the embedded service's: jobs without a base_url find what serve stored)",
    default: DEFAULT_EMBEDDED_DATA_DIR,
  },
  config: {
    type: 'string',
    valueName: 'FILE',
    description: 'Service settings YAML (teams, keys, limits, engine, faults); without it, or a file without teams: team demo with one Admin key from SERVICE_API_KEY, or a generated key printed once',
  },
} as const satisfies Record<string, OptionSpec>;

export const SERVE_SUMMARY = 'Run the local query service until SIGTERM or SIGINT';
