import type { ServiceSettings, ServiceSettingsInput } from '../../service/settings.ts';

const GiB = 1024 ** 3;

/**
 * The embedded service a job file or `sluice schedule` starts without a settings file, made to
 * run for months in a container (docs/operations.md, "What grows"):
 * - results kept a day, not the hosted service's 90: long enough to re-export or resume, short
 *   enough that an every-minute schedule does not fill the disk with results nothing reads;
 * - execution records kept 2 days after their result expired, then forgotten (a run resuming a
 *   forgotten execution starts a fresh one);
 * - the result store bounded (`limits.result_store_max_bytes`): the least recently read results
 *   go first;
 * - credits a schedule cannot spend in a cycle: the local service charges nothing real, and a
 *   demo that stops with PAYMENT_REQUIRED after a few hours teaches nothing.
 * A settings file (`connection.embedded.settings`) is read over these (src/service/settings.ts,
 * mergeSettings): it changes what it names; its `teams`, if any, replace the team.
 */
export const EMBEDDED_DEFAULTS = {
  /** One execution a second of the large tier (20 credits) spends 52M in a 30-day cycle. */
  credits_per_cycle: 1_000_000_000,
  retention_days: 1,
  /** Execution records kept 2 days after their result expired: two every-minute jobs keep about 8,640. */
  execution_record_retention_days: 2,
  result_store_max_bytes: GiB,
} as const;

export function embeddedSettings(apiKey: string): ServiceSettingsInput {
  return {
    teams: [{ name: 'demo', plan: { credits_per_cycle: EMBEDDED_DEFAULTS.credits_per_cycle }, keys: [{ key: apiKey, scopes: ['Admin'] }] }],
    limits: {
      retention_days: EMBEDDED_DEFAULTS.retention_days,
      execution_record_retention_days: EMBEDDED_DEFAULTS.execution_record_retention_days,
      result_store_max_bytes: EMBEDDED_DEFAULTS.result_store_max_bytes,
    },
  };
}

/**
 * The embedded service's settings from a settings file read over these defaults (it need only name
 * what it changes); `ownTeams` when the file names its teams, which then replace the team of `apiKey`.
 */
export async function embeddedSettingsFile(path: string, apiKey: string, env: Readonly<Record<string, string | undefined>> = process.env): Promise<{ settings: ServiceSettings; ownTeams: boolean }> {
  // Imported here so that a job on a remote service never loads the service's schema.
  const { loadSettingsOver } = await import('../../service/settings.ts');
  return loadSettingsOver(path, embeddedSettings(apiKey), env);
}
