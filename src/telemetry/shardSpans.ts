import type { ShardSpec } from '../jobs/shards/plan.ts';
import type { ShardOutputSummary, ShardSummary } from '../jobs/shards/runShard.ts';
import { inSpan, type SpanAttributes } from './index.ts';

// A shard of a sharded run as spans: `sluice.shard` (a child of the run's span when the run started
// the shard processes and handed them its trace through TRACEPARENT), one `sluice.output` per
// output (the shard's parts), and `sluice.output.commit` when this shard is the one that commits.

/** What a shard's span says from its start: the job, its index and count, the run id. */
export function shardAttributes(job: string, shard: ShardSpec): SpanAttributes {
  return { 'sluice.job': job, 'sluice.shard.index': shard.index, 'sluice.shard.count': shard.count, 'sluice.run_id': shard.runId };
}

/** What a finished shard adds: the execution, whether it started it, its credits, its rows of the result (as a run's: the first output's) and the bytes of all its outputs. */
export function shardDone(summary: ShardSummary): SpanAttributes {
  return {
    'sluice.execution_id': summary.executionId,
    'sluice.execution.started': summary.startedExecution,
    'sluice.credits': summary.credits,
    'sluice.rows': summary.outputs[0]?.rows ?? 0,
    'sluice.bytes': summary.outputs.reduce((n, o) => n + o.bytes, 0),
  };
}

/** One output of a shard in its span: its parts, and the outcome of the commit (`waiting` while shards are missing). */
export function shardOutputSpan(url: string, format: string, write: () => Promise<ShardOutputSummary>): Promise<ShardOutputSummary> {
  return inSpan('sluice.output', { 'sluice.output.url': url, 'sluice.output.format': format }, async (span) => {
    const summary = await write();
    span.set({ 'sluice.rows': summary.rows, 'sluice.files': summary.parts, 'sluice.bytes': summary.bytes, 'sluice.output.resumed_files': summary.resumedParts, 'sluice.commit.outcome': summary.commit });
    return summary;
  });
}

/** The commit of a sharded export by the shard that found every record, in its own span. */
export function shardCommitSpan<T extends string>(content: { readonly files: number; readonly rows: number }, commit: () => Promise<T>): Promise<T> {
  return inSpan('sluice.output.commit', { 'sluice.commit.protocol': 'shards', 'sluice.files': content.files, 'sluice.rows': content.rows }, async (span) => {
    const outcome = await commit();
    span.set({ 'sluice.commit.outcome': outcome });
    return outcome;
  });
}
