import { Cron, CronPattern } from 'croner';
import { ViewError } from './errors.ts';

const MINUTE = 60_000;
const DAY = 1440 * MINUTE;
/** protocol.md section 3: a refresh every 15 minutes at the most, once a week at the least. */
export const MIN_INTERVAL_MS = 15 * MINUTE;
export const MAX_INTERVAL_MS = 7 * DAY;
/** Days of the calendar looked at: two Februaries, so leap years cannot hide a long gap. */
const HORIZON_DAYS = 800;

export interface ScheduleIntervals {
  minMs: number;
  maxMs: number;
}

function cronOf(expression: string): Cron {
  return new Cron(expression, { paused: true, timezone: 'UTC', mode: '5-part' });
}

function flags(bits: number[]): number[] {
  const out: number[] = [];
  bits.forEach((b, i) => {
    if (b) out.push(i);
  });
  return out;
}

/**
 * The shortest and longest time between successive runs. In UTC every selected day runs the same
 * times of day, so the gaps are those within a day plus, between consecutive selected days, the
 * day gap minus the evening and morning; the selected days come from the day fields alone.
 * (Walking every run of a year of a 15-minute schedule takes seconds; this takes milliseconds.)
 */
export function scheduleIntervals(expression: string, from: number): ScheduleIntervals {
  const pattern = new CronPattern(expression, 'UTC', { mode: '5-part' });
  const minutes = flags(pattern.minute);
  const hours = flags(pattern.hour);
  const times = hours.flatMap((h) => minutes.map((m) => (h * 60 + m) * MINUTE)).sort((a, b) => a - b);
  let minMs = Infinity;
  let maxMs = 0;
  for (let i = 1; i < times.length; i += 1) {
    const gap = (times[i] as number) - (times[i - 1] as number);
    minMs = Math.min(minMs, gap);
    maxMs = Math.max(maxMs, gap);
  }
  const first = times[0] as number;
  const last = times.at(-1) as number;
  const [, , dom, month, dow] = expression.trim().split(/\s+/);
  const days = cronOf(`0 0 ${dom} ${month} ${dow}`);
  const start = Math.floor(from / DAY) * DAY;
  let prev = days.nextRun(new Date(start - 1));
  if (prev === null) return { minMs: Infinity, maxMs: Infinity };
  const end = start + HORIZON_DAYS * DAY;
  for (;;) {
    const next = days.nextRun(prev);
    if (next === null) return { minMs, maxMs: Infinity };
    const gap = next.getTime() - prev.getTime() - last + first;
    minMs = Math.min(minMs, gap);
    maxMs = Math.max(maxMs, gap);
    if (next.getTime() > end || maxMs > MAX_INTERVAL_MS) break;
    prev = next;
  }
  return { minMs, maxMs };
}

const HINT = 'five fields: minute hour day-of-month month day-of-week, in UTC, e.g. "*/15 * * * *" or "0 6 * * 1"';

/**
 * Checks a view's refresh schedule: five fields, no run closer than 15 minutes to the previous one
 * and none further than a week. Throws ViewError 400 with the reason.
 */
export function checkSchedule(expression: string, now: number): void {
  const fields = expression.trim().split(/\s+/).filter((f) => f !== '');
  const bad = (why: string): ViewError => new ViewError(400, `Bad Request: cron_expression "${expression}": ${why}`);
  if (fields.length !== 5) throw bad(`has ${fields.length} field${fields.length === 1 ? '' : 's'}; it needs ${HINT}`);
  try {
    cronOf(expression);
  } catch (err) {
    throw bad(`${(err as Error).message.replace(/^CronPattern: /, '')} (${HINT})`);
  }
  const { minMs, maxMs } = scheduleIntervals(expression, now);
  if (minMs < MIN_INTERVAL_MS) {
    throw bad(`runs ${formatGap(minMs)} after a previous run; views refresh every 15 minutes at the most (e.g. "*/15 * * * *")`);
  }
  if (maxMs > MAX_INTERVAL_MS) {
    const gap = maxMs === Infinity ? 'never runs again' : `leaves ${formatGap(maxMs)} between runs`;
    throw bad(`${gap}; views refresh at least once a week (e.g. "0 0 * * 1")`);
  }
}

/** The first run strictly after `after`. */
export function nextRunAfter(expression: string, after: number): number | undefined {
  return cronOf(expression).nextRun(new Date(after))?.getTime();
}

function formatGap(ms: number): string {
  if (ms < 2 * 60 * MINUTE) {
    const m = Math.round(ms / MINUTE);
    return `${m} minute${m === 1 ? '' : 's'}`;
  }
  if (ms < 2 * DAY) return `${Math.round(ms / (60 * MINUTE))} hours`;
  return `${Math.round(ms / DAY)} days`;
}
