import type { BackfillPlan } from '../../jobs/backfill/backfillPlan.ts';

/** Chunk lines `--plan` prints before it only counts the rest. */
const SHOWN_CHUNKS = 50;

/** `--plan`: the backfill's chunks, each with what the run does with it. */
export function backfillLines(b: BackfillPlan): string[] {
  const head = `  backfill: ${b.chunks.length} chunks of ${b.chunk}, ${b.concurrency} at once: ${b.execute} to execute (${b.credits} credits)${b.skip > 0 ? `, ${b.skip} executed by a killed run (skipped: not executed or paid again)` : ''}`;
  const lines = b.chunks.slice(0, SHOWN_CHUNKS).map((c) => {
    const what = c.action === 'execute' ? 'execute' : c.action === 'read' ? `skip: read execution ${c.executionId} (${(c.rows ?? 0).toLocaleString('en-US')} rows)` : `skip: wait for execution ${c.executionId} (running)`;
    return `    [${c.from}, ${c.to})  ${what}`;
  });
  const more = b.chunks.length > SHOWN_CHUNKS ? [`    ... ${b.chunks.length - SHOWN_CHUNKS} more chunks`] : [];
  return [head, ...lines, ...more];
}

/** `--plan --json`: the backfill, every chunk listed. */
export function backfillFields(b: BackfillPlan): Record<string, unknown> {
  return {
    chunk: b.chunk,
    concurrency: b.concurrency,
    execute: b.execute,
    skip: b.skip,
    credits: b.credits,
    chunks: b.chunks.map((c) => ({ from: c.from, to: c.to, action: c.action, execution_id: c.executionId ?? null, ...(c.rows === undefined ? {} : { rows: c.rows }) })),
  };
}
