import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MESSAGES } from '../../../src/protocol/index.ts';
import { ManualClock } from '../../../src/service/clock.ts';
import { CreditLedger, type LedgerDoc } from '../../../src/service/limits/credits.ts';
import { cycleAt, daysCycle } from '../../../src/service/limits/cycle.ts';
import { CreditLimitError } from '../../../src/service/limits/errors.ts';
import { JsonStore } from '../../../src/service/store.ts';

const DAY = 86_400_000;
const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

function ledger(clock: ManualClock, limit = 50, store?: JsonStore<LedgerDoc>): CreditLedger {
  return new CreditLedger({ clock, cycle: daysCycle(30), limitOf: () => limit, ...(store ? { store } : {}) });
}

describe('billing cycles', () => {
  it('cuts N-day cycles from the anchor and rolls over exactly at the end', () => {
    const c = cycleAt(daysCycle(30), 45 * DAY);
    expect(c).toEqual({ start: 30 * DAY, end: 60 * DAY });
    expect(cycleAt(daysCycle(30), 60 * DAY - 1).start).toBe(30 * DAY);
    expect(cycleAt(daysCycle(30), 60 * DAY).start).toBe(60 * DAY);
    // Before the anchor: earlier cycles, not negative-length ones.
    expect(cycleAt(daysCycle(7, 10 * DAY), 9 * DAY)).toEqual({ start: 3 * DAY, end: 10 * DAY });
  });

  it('cuts calendar months in UTC, February included', () => {
    const feb = cycleAt({ kind: 'calendar_month' }, Date.UTC(2028, 1, 29, 23, 59));
    expect(new Date(feb.start).toISOString()).toBe('2028-02-01T00:00:00.000Z');
    expect(new Date(feb.end).toISOString()).toBe('2028-03-01T00:00:00.000Z');
    const dec = cycleAt({ kind: 'calendar_month' }, Date.UTC(2026, 11, 31, 12));
    expect(new Date(dec.end).toISOString()).toBe('2027-01-01T00:00:00.000Z');
  });

  it('refuses a zero-day cycle with a clear error', () => {
    expect(() => cycleAt(daysCycle(0), 0)).toThrow(/at least one day/);
  });
});

describe('CreditLedger', () => {
  it('refuses (402, the listed message) a reservation that would exceed the cycle, counting reserved credits', async () => {
    const clock = new ManualClock(100 * DAY);
    const l = ledger(clock, 50);
    await l.reserve('demo', 20, 'a');
    await l.reserve('demo', 20, 'b');
    expect(l.reserved('demo')).toBe(40);
    const err = await l.reserve('demo', 20, 'c').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CreditLimitError);
    expect((err as CreditLimitError).status).toBe(402);
    expect((err as CreditLimitError).message).toBe(MESSAGES.billingLimit);
    expect((err as CreditLimitError).available).toBe(10);
    await l.reserve('demo', 10, 'c'); // exactly fits
    expect(l.executions('demo')).toBe(3);
  });

  it('charges what an execution really cost; one that did not run frees its credits', async () => {
    const clock = new ManualClock(100 * DAY);
    const l = ledger(clock, 30);
    await l.reserve('demo', 20, 'a');
    await l.settle('a', 0); // failed with a syntax error: cost 0
    expect(l.used('demo')).toBe(0);
    await l.reserve('demo', 20, 'b');
    await l.settle('b', 20);
    await l.settle('b', 20); // idempotent
    expect(l.used('demo')).toBe(20);
    await expect(l.reserve('demo', 20, 'c')).rejects.toBeInstanceOf(CreditLimitError);
    await l.reserve('demo', 10, 'c');
  });

  it('keeps teams apart', async () => {
    const clock = new ManualClock(100 * DAY);
    const l = ledger(clock, 10);
    await l.reserve('demo', 10, 'a');
    await l.settle('a', 10);
    await expect(l.reserve('demo', 10, 'b')).rejects.toBeInstanceOf(CreditLimitError);
    await l.reserve('other', 10, 'c');
    expect(l.used('other')).toBe(0);
  });

  it('rolls over: a new cycle starts at zero, and a charge lands in the cycle it was reserved in', async () => {
    const clock = new ManualClock(90 * DAY + 1);
    const l = ledger(clock, 10);
    await l.reserve('demo', 10, 'a');
    clock.advance(30 * DAY); // next cycle before the execution ends
    await l.settle('a', 10);
    expect(l.used('demo')).toBe(0);
    await l.reserve('demo', 10, 'b');
    await l.settle('b', 10);
    expect(l.used('demo')).toBe(10);
    clock.advance(30 * DAY);
    expect(l.used('demo')).toBe(0);
    expect(l.executions('demo')).toBe(0);
  });

  it('persists its cycles as JSON under the data dir and finds them after a restart', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sluice-credits-'));
    dirs.push(dir);
    const clock = new ManualClock(100 * DAY);
    const store = new JsonStore<LedgerDoc>(join(dir, 'limits'));
    await store.init();
    const l = ledger(clock, 100, store);
    await l.reserve('demo', 20, 'a');
    await l.settle('a', 20);
    await store.flush();

    const store2 = new JsonStore<LedgerDoc>(join(dir, 'limits'));
    await store2.init();
    const again = ledger(clock, 100, store2);
    await again.load();
    expect(again.used('demo')).toBe(20);
    expect(again.executions('demo')).toBe(1);
    expect(again.toJSON()).toEqual({ teams: { demo: { [String(90 * DAY)]: { used: 20, executions: 1 } } } });
  });

  it('release undoes an admission that was not recorded', async () => {
    const l = ledger(new ManualClock(100 * DAY), 10);
    await l.reserve('demo', 10, 'a');
    await l.release('a');
    expect(l.executions('demo')).toBe(0);
    await l.reserve('demo', 10, 'b');
  });
});
