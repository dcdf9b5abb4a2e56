import { join, resolve } from 'node:path';
import type { Usage } from '../../protocol/index.ts';
import { defineCommand, flag, stringOption } from '../command.ts';
import { CONNECTION_OPTIONS, withConnection } from '../connection.ts';
import { EXIT } from '../exitCodes.ts';
import { writeOut } from '../io.ts';
import { toJson } from '../output/json.ts';
import { folderBytes } from '../output/folderBytes.ts';
import { formatBytes } from '../output/summary.ts';

export const usageCommand = defineCommand({
  name: 'usage',
  summary: "Print the team's usage in the billing cycle: credits used and left, executions, storage; on the embedded service also its data folder and result store on disk (needs an Admin key)",
  options: {
    json: { type: 'boolean', description: 'Print the service answer as JSON' },
    ...CONNECTION_OPTIONS,
  },
  async run({ io, values, log, signal }) {
    return withConnection(values, io, log, signal, async ({ client }) => {
      const usage = await client.getUsage({ signal });
      // The embedded service (no base URL given): what its data folder holds on disk, results first.
      const local = (stringOption(values, 'base-url') ?? io.env.SERVICE_BASE_URL) ? undefined : await localDisk(resolve(io.cwd, stringOption(values, 'data-dir') ?? '.sluice/service'));
      const disk = local === undefined ? {} : { data_dir: local };
      await writeOut(io.stdout, flag(values, 'json') ? toJson({ ...usage, credits_left: creditsLeft(usage), ...disk }) : formatUsage(usage, local));
      return EXIT.ok;
    });
  },
});

function creditsLeft(usage: Usage): number {
  return Math.max(0, usage.credits_limit - usage.credits_used);
}

/** The embedded service's data folder on disk: all of it, and its result store (results and their encodings). */
interface LocalDisk {
  readonly path: string;
  readonly bytes: number;
  readonly results_bytes: number;
}

async function localDisk(dataDir: string): Promise<LocalDisk> {
  return { path: dataDir, bytes: await folderBytes(dataDir), results_bytes: await folderBytes(join(dataDir, 'engine', 'results')) };
}

export function formatUsage(usage: Usage, local?: LocalDisk): string {
  const n = (x: number) => x.toLocaleString('en-US');
  return [
    `team ${usage.team}, billing cycle ${usage.cycle_start} to ${usage.cycle_end}`,
    `  credits     ${n(usage.credits_used)} used of ${n(usage.credits_limit)}, ${n(creditsLeft(usage))} left`,
    `  executions  ${n(usage.executions)}`,
    `  storage     ${formatBytes(usage.storage_bytes)} of ${formatBytes(usage.storage_quota_bytes)}`,
    ...(local === undefined ? [] : [`  results     ${formatBytes(local.results_bytes)} on disk (the result store; data folder ${local.path}: ${formatBytes(local.bytes)})`]),
    ...(usage.result_store_bytes === undefined || usage.result_store_max_bytes === undefined
      ? []
      : [`  store bound ${formatBytes(usage.result_store_bytes)} of ${formatBytes(usage.result_store_max_bytes)} (all teams' results; past it the least recently read expire, once no one is reading them)`]),
    '',
  ].join('\n');
}
