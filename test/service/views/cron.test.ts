import { describe, expect, it } from 'vitest';
import { checkSchedule, nextRunAfter, scheduleIntervals } from '../../../src/service/views/cron.ts';
import { ViewError } from '../../../src/service/views/errors.ts';

const NOW = Date.UTC(2026, 0, 1);
const MIN = 60_000;
const DAY = 86_400_000;

function reason(expr: string): string {
  try {
    checkSchedule(expr, NOW);
    return 'ok';
  } catch (err) {
    expect(err).toBeInstanceOf(ViewError);
    expect((err as ViewError).status).toBe(400);
    return (err as ViewError).message;
  }
}

describe('view refresh schedules', () => {
  it('accepts every 15 minutes, hourly, daily and weekly', () => {
    for (const ok of ['*/15 * * * *', '0 * * * *', '30 6 * * *', '0 0 * * 1', '0,30 9-17 * * 1-5', '0 0 */2 * *']) expect(reason(ok)).toBe('ok');
  });

  it('refuses more often than every 15 minutes, with the gap found', () => {
    expect(reason('*/10 * * * *')).toMatch(/cron_expression "\*\/10 \* \* \* \*": runs 10 minutes after a previous run; views refresh every 15 minutes at the most/);
    // Only one gap is short: 23:55 -> 00:00 the next day.
    expect(reason('0,55 0,23 * * *')).toMatch(/runs 5 minutes after/);
    expect(reason('* * * * *')).toMatch(/runs 1 minute after/);
  });

  it('refuses less often than weekly, monthly and yearly ones included', () => {
    expect(reason('0 0 1 * *')).toMatch(/leaves 31 days between runs; views refresh at least once a week/);
    expect(reason('0 0 1 1 *')).toMatch(/between runs; views refresh at least once a week/);
    expect(reason('0 0 29 2 *')).toMatch(/days between runs/);
    // The 1st, 8th, 15th, 22nd and 29th: February (not leap) leaves exactly 7 days, March 29 -> April 1 is fine.
    expect(reason('0 0 1,8,15,22,29 * *')).toBe('ok');
    expect(reason('0 0 1,8,15,22 * *')).toMatch(/leaves (9|10) days/);
  });

  it('refuses anything but five valid fields, saying what is expected', () => {
    expect(reason('0 */15 * * * *')).toMatch(/has 6 fields; it needs five fields: minute hour day-of-month month day-of-week/);
    expect(reason('@hourly')).toMatch(/has 1 field;/);
    expect(reason('61 * * * *')).toMatch(/cron_expression "61 \* \* \* \*": .*five fields/);
    expect(reason('')).toMatch(/has 0 fields/);
  });

  it('computes gaps and next runs in UTC', () => {
    expect(scheduleIntervals('0 */6 * * *', NOW)).toEqual({ minMs: 360 * MIN, maxMs: 360 * MIN });
    expect(scheduleIntervals('0 0 * * 1', NOW)).toEqual({ minMs: 7 * DAY, maxMs: 7 * DAY });
    expect(nextRunAfter('*/15 * * * *', NOW)).toBe(NOW + 15 * MIN);
    expect(nextRunAfter('*/15 * * * *', NOW - 1)).toBe(NOW);
  });
});
