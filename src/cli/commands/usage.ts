import type { Usage } from '../../protocol/index.ts';
import { defineCommand, flag } from '../command.ts';
import { CONNECTION_OPTIONS, withConnection } from '../connection.ts';
import { EXIT } from '../exit-codes.ts';
import { writeOut } from '../io.ts';
import { toJson } from '../output/json.ts';
import { formatBytes } from '../output/summary.ts';

export const usageCommand = defineCommand({
  name: 'usage',
  summary: "Print the team's usage in the billing cycle: credits used and left, executions, storage (needs an Admin key)",
  options: {
    json: { type: 'boolean', description: 'Print the service answer as JSON' },
    ...CONNECTION_OPTIONS,
  },
  async run({ io, values, log, signal }) {
    return withConnection(values, io, log, signal, async ({ client }) => {
      const usage = await client.getUsage({ signal });
      await writeOut(io.stdout, flag(values, 'json') ? toJson({ ...usage, credits_left: creditsLeft(usage) }) : formatUsage(usage));
      return EXIT.ok;
    });
  },
});

function creditsLeft(usage: Usage): number {
  return Math.max(0, usage.credits_limit - usage.credits_used);
}

export function formatUsage(usage: Usage): string {
  const n = (x: number) => x.toLocaleString('en-US');
  return [
    `team ${usage.team}, billing cycle ${usage.cycle_start} to ${usage.cycle_end}`,
    `  credits     ${n(usage.credits_used)} used of ${n(usage.credits_limit)}, ${n(creditsLeft(usage))} left`,
    `  executions  ${n(usage.executions)}`,
    `  storage     ${formatBytes(usage.storage_bytes)} of ${formatBytes(usage.storage_quota_bytes)}`,
    ...(usage.result_store_bytes === undefined || usage.result_store_max_bytes === undefined
      ? []
      : [`  results     ${formatBytes(usage.result_store_bytes)} stored of ${formatBytes(usage.result_store_max_bytes)} (all teams; least recently read expire first)`]),
    '',
  ].join('\n');
}
