import type { JobPlan } from '../../jobs/plan/planRun.ts';
import { backfillFields, backfillLines } from './backfillPlanText.ts';
import { targetText } from '../../export/iceberg/catalog/catalogConfig.ts';
import type { ShardSummary } from '../../jobs/shards/runShard.ts';
import { fmtDuration } from '../progress.ts';
import { formatBytes } from './summary.ts';

/** One shard's summary as one JSON object (`--json`). */
export function shardFields(s: ShardSummary): Record<string, unknown> {
  return {
    job: s.job,
    outcome: 'ok',
    shard: s.shard,
    shards: s.shards,
    run_id: s.runId,
    execution_id: s.executionId,
    started_execution: s.startedExecution,
    credits: s.credits,
    duration_ms: Math.round(s.durationMs),
    outputs: s.outputs.map((o) => ({
      url: o.url,
      format: o.format,
      parts: o.parts,
      resumed_parts: o.resumedParts,
      rows: o.rows,
      bytes: o.bytes,
      commit: o.commit,
      ...(o.waitingFor.length > 0 ? { waiting_for: o.waitingFor } : {}),
    })),
  };
}

export function formatShard(s: ShardSummary): string {
  const lines = [
    `${s.job}: shard ${s.shard} of ${s.shards} (run ${s.runId}), execution ${s.executionId}${s.startedExecution ? ` started (${s.credits} credits)` : ''}, in ${fmtDuration(s.durationMs)}`,
    ...s.outputs.map(
      (o) =>
        `  ${o.url}  ${o.format}  ${o.parts} parts  ${o.rows.toLocaleString('en-US')} rows  ${formatBytes(o.bytes)}` +
        `${o.resumedParts > 0 ? `  (${o.resumedParts} kept from a killed attempt)` : ''}  ` +
        (o.commit === 'waiting' ? `waiting for shards ${o.waitingFor.join(', ')} (the last one commits)` : o.commit === 'committed' ? 'committed' : 'committed by another shard'),
    ),
  ];
  return `${lines.join('\n')}\n`;
}

/** `--plan --json`: one object per job. */
export function planFields(p: JobPlan): Record<string, unknown> {
  return {
    job: p.job,
    action: p.action,
    credits: p.credits,
    execution_id: p.executionId ?? null,
    reason: p.reason,
    rows: p.rows ?? null,
    bytes: p.bytes ?? null,
    max_credits: p.budget.maxCredits ?? null,
    within_budget: p.budget.withinBudget,
    shards: p.shards,
    outputs: p.outputs.map((o) => ({
      url: o.url,
      format: o.format,
      action: o.action,
      parts: o.parts ?? null,
      rows_per_part: o.rowsPerPart ?? null,
      parts_per_shard: o.partsPerShard ?? null,
      committed_execution: o.committedExecution ?? null,
      ...(o.commitsTo === undefined ? {} : { catalog: o.commitsTo.catalog ?? null, catalog_table: o.commitsTo.table }),
      ...(o.schemaDrift === undefined ? {} : { schema_drift: o.schemaDrift }),
      decode: { path: o.decode.path, ...(o.decode.pages === undefined ? {} : { pages: o.decode.pages }), why: o.decode.why },
    })),
    ...(p.cursor === undefined ? {} : { cursor: { column: p.cursor.column, from: p.cursor.from, value: p.cursor.value, ...(p.cursor.lookback === undefined ? {} : { lookback: p.cursor.lookback }) } }),
    ...(p.contract === undefined ? {} : { contract: p.contract.map((c) => ({ check: c.check, what: c.what, when: c.when, on_violation: c.onViolation, ...(c.quarantine === undefined ? {} : { quarantine: c.quarantine }) })) }),
    ...(p.backfill === undefined ? {} : { backfill: backfillFields(p.backfill) }),
  };
}

function cursorOrigin(c: NonNullable<JobPlan['cursor']>): string {
  if (c.from === null) return 'the initial value: no output holds a cursor yet';
  return c.lookback === undefined ? 'the committed value' : `committed ${c.from}, less the lookback ${c.lookback}`;
}

/** What each schema_drift policy does when the result's columns differ from the output's, checked before any page. */
const DRIFT_DOES = {
  evolve: 'a changed schema is taken where the output can hold it, else fails before any page',
  freeze: 'the committed columns are kept: new ones dropped, missing ones NULL',
  fail: 'any change of columns or types fails before any page',
} as const;

const CHECKED_WHEN = { 'before-fetch': 'before any page', stream: 'on every row', end: 'at the end of the read' } as const;

/** `    before any page  fail  expect.columns: id bigint` (and where a quarantine sets rows aside). */
function contractLine(c: NonNullable<JobPlan['contract']>[number]): string {
  const to = c.quarantine === undefined ? '' : ` -> ${c.quarantine.join(', ')}`;
  return `    ${CHECKED_WHEN[c.when].padEnd(22)} ${c.onViolation.padEnd(10)} ${c.check}: ${c.what}${to}`;
}

export function formatPlan(p: JobPlan): string {
  const what = p.action === 'execute' ? `would execute (${p.credits} credits)` : p.action === 'reuse' ? `would reuse stored result ${p.executionId} (0 credits)` : `would resume execution ${p.executionId} (0 credits)`;
  const size = p.rows === undefined ? 'rows and bytes known once it ran' : `${p.rows.toLocaleString('en-US')} rows${p.bytes === undefined ? '' : `, ${formatBytes(p.bytes)}`}`;
  const lines = [
    `${p.job}: ${what}: ${p.reason}`,
    `  result: ${size}${p.shards > 1 ? `; ${p.shards} shards` : ''}${p.budget.withinBudget ? '' : `; OVER max_credits ${p.budget.maxCredits}`}`,
    ...p.outputs.map(
      (o) =>
        `  ${o.url}  ${o.format}  ${o.action === 'skip' ? 'skip (holds this execution already)' : 'write'}` +
        `${o.parts === undefined ? '' : `  ${o.parts} parts of ${o.rowsPerPart?.toLocaleString('en-US')} rows`}` +
        `${o.partsPerShard === undefined ? '' : ` (per shard: ${o.partsPerShard.join(', ')})`}` +
        `${o.committedExecution === undefined ? '' : `  now holds ${o.committedExecution}`}` +
        `${o.commitsTo === undefined ? '' : `\n    commits to ${targetText(o.commitsTo)}`}` +
        `${o.schemaDrift === undefined ? '' : `\n    schema_drift: ${o.schemaDrift} (${DRIFT_DOES[o.schemaDrift]})`}` +
        `\n    decode: ${o.decode.path} (${o.decode.why})`,
    ),
    ...(p.cursor === undefined ? [] : [`  cursor ${p.cursor.column}: from ${p.cursor.value} (${cursorOrigin(p.cursor)})`]),
    ...(p.contract === undefined ? [] : ['  contract:', ...p.contract.map(contractLine)]),
    ...(p.backfill === undefined ? [] : backfillLines(p.backfill)),
  ];
  return `${lines.join('\n')}\n`;
}
