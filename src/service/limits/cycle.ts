/**
 * Billing cycles. A cycle is a half-open interval [start, end) of epoch milliseconds, UTC.
 * `days`: fixed-length cycles counted from an anchor (the anchor is any cycle start; earlier times
 * get earlier cycles). `calendar_month`: from the 1st of a month 00:00 UTC to the 1st of the next.
 */
export type CycleSpec = { kind: 'days'; days: number; anchor: number } | { kind: 'calendar_month' };

export interface Cycle {
  start: number;
  end: number;
}

const DAY_MS = 86_400_000;

export function cycleAt(spec: CycleSpec, now: number): Cycle {
  if (spec.kind === 'calendar_month') {
    const d = new Date(now);
    const start = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
    const end = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
    return { start, end };
  }
  if (!(spec.days > 0)) throw new RangeError(`a billing cycle lasts at least one day, got ${spec.days}`);
  const length = spec.days * DAY_MS;
  const start = spec.anchor + Math.floor((now - spec.anchor) / length) * length;
  return { start, end: start + length };
}

/** Cycles of N days anchored at the Unix epoch, so every process agrees on where they start. */
export function daysCycle(days: number, anchor = 0): CycleSpec {
  return { kind: 'days', days, anchor };
}
