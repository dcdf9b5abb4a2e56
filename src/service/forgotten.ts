import { readFile } from 'node:fs/promises';
import { decodeTime } from 'ulid';
import { z } from 'zod';
import { MESSAGES } from '../protocol/index.ts';
import { writeJsonAtomically } from '../kit/atomicFile.ts';
import type { ExecutionRecord } from './executionRecord.ts';
import { formatTimestamp } from './timestamp.ts';

const DAY_MS = 86_400_000;

/**
 * When an execution's record may be forgotten (deleted from memory and disk): its result's expiry,
 * or its end without a result, plus `limits.execution_record_retention_days`. Never while it is
 * pending or running. A completed one is moved to EXPIRED (and its result dropped) first.
 */
export function forgetAt(rec: ExecutionRecord, retentionDays: number): number | undefined {
  const keep = retentionDays * DAY_MS;
  switch (rec.state) {
    case 'QUERY_STATE_COMPLETED':
    case 'QUERY_STATE_COMPLETED_PARTIAL':
    case 'QUERY_STATE_EXPIRED':
      return rec.expiresAt + keep;
    case 'QUERY_STATE_FAILED':
      return rec.endedAt + keep;
    case 'QUERY_STATE_CANCELLED':
      return rec.cancelledAt + keep;
    default:
      return undefined;
  }
}

const MarkSchema = z.object({ submitted_through: z.number() });

/**
 * What the service remembers of the executions it forgot: only the newest submission time among
 * them (one number, persisted beside the records), so a status or result request for an id it no
 * longer knows can say why, without a list that would grow as the records did.
 */
export class ForgottenExecutions {
  /** Undefined: remembered for this process's life only. */
  readonly #file: string | undefined;
  #through: number | undefined;

  constructor(file?: string) {
    this.#file = file;
  }

  async load(): Promise<void> {
    if (this.#file === undefined) return;
    let text: string;
    try {
      text = await readFile(this.#file, 'utf8');
    } catch {
      return;
    }
    const parsed = MarkSchema.safeParse(safeJson(text));
    // A torn or foreign file only loses the longer 404 message of old ids.
    if (parsed.success) this.#through = parsed.data.submitted_through;
  }

  /** Records executions submitted at these times as forgotten (persisted before it resolves). */
  async note(submittedAt: Iterable<number>): Promise<void> {
    let through = this.#through;
    for (const t of submittedAt) through = through === undefined ? t : Math.max(through, t);
    if (through === undefined || through === this.#through) return;
    this.#through = through;
    if (this.#file !== undefined) await writeJsonAtomically(this.#file, { submitted_through: through }, { mode: 0o600 });
  }

  /**
   * The 404 message for an execution id the caller cannot see. It depends on the id and on what was
   * forgotten, never on whether another team's execution has that id.
   */
  notFoundMessage(id: string, retentionDays: number): string {
    const submitted = submittedAtOf(id);
    if (this.#through === undefined || submitted === undefined || submitted > this.#through) return MESSAGES.notFound;
    return (
      `${MESSAGES.notFound}: the service keeps an execution's record ${formatDays(retentionDays)} after its result expires ` +
      `(or after it ends without one; limits.execution_record_retention_days) and has forgotten executions submitted up to ` +
      `${formatTimestamp(this.#through)}; execution ${id} was submitted ${formatTimestamp(submitted)}. Submit the query again`
    );
  }
}

function submittedAtOf(id: string): number | undefined {
  try {
    return decodeTime(id);
  } catch {
    return undefined;
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function formatDays(days: number): string {
  if (days === 1) return '1 day';
  if (Number.isInteger(days)) return `${days} days`;
  return `${Math.round(days * 24 * 100) / 100} hours`;
}
