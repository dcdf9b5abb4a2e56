import { describe, expect, it } from 'vitest';
import { ManualClock, settle } from '../../src/scheduler/manualClock.ts';
import { Metrics } from '../../src/scheduler/metrics.ts';
import { Scheduler, type RunOutcome } from '../../src/scheduler/scheduler.ts';

const ok: RunOutcome = { rows: 10, bytes: 100, credits: 10 };

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('Scheduler', () => {
  it('runs a job at every cron tick as the clock moves, and not before', async () => {
    const clock = new ManualClock('2026-01-01T00:00:00Z');
    const starts: string[] = [];
    const scheduler = new Scheduler({
      jobs: [{ name: 'q', schedule: '*/15 * * * *' }],
      clock,
      run: async () => {
        starts.push(clock.now().toISOString());
        return ok;
      },
    });
    scheduler.start();
    await clock.advanceTo('2026-01-01T00:14:59Z');
    expect(starts).toEqual([]);
    await clock.advanceTo('2026-01-01T01:00:00Z');
    expect(starts).toEqual(['2026-01-01T00:15:00.000Z', '2026-01-01T00:30:00.000Z', '2026-01-01T00:45:00.000Z', '2026-01-01T01:00:00.000Z']);
    await scheduler.stop(1000);
  });

  it('honours the time zone of a job', async () => {
    const clock = new ManualClock('2026-07-01T00:00:00Z');
    const starts: string[] = [];
    const scheduler = new Scheduler({
      jobs: [{ name: 'daily', schedule: '0 6 * * *', timezone: 'Europe/Berlin' }],
      clock,
      run: async () => (starts.push(clock.now().toISOString()), ok),
    });
    scheduler.start();
    await clock.advanceTo('2026-07-02T00:00:00Z');
    // 06:00 in Berlin in July (CEST, UTC+2) is 04:00 UTC.
    expect(starts).toEqual(['2026-07-01T04:00:00.000Z']);
    await scheduler.stop(1000);
  });

  it('never starts a second run of a job while one is going: the ticks in between are skipped and counted', async () => {
    const clock = new ManualClock('2026-01-01T00:00:00Z');
    const metrics = new Metrics(['slow', 'fast']);
    const gate = deferred();
    let slowStarts = 0;
    let concurrent = 0;
    let maxConcurrent = 0;
    const scheduler = new Scheduler({
      jobs: [
        { name: 'slow', schedule: '*/15 * * * *' },
        { name: 'fast', schedule: '*/30 * * * *' },
      ],
      clock,
      metrics,
      run: async (job) => {
        if (job === 'fast') return ok;
        slowStarts += 1;
        concurrent += 1;
        maxConcurrent = Math.max(maxConcurrent, concurrent);
        await gate.promise;
        concurrent -= 1;
        return ok;
      },
    });
    scheduler.start();
    await clock.advanceTo('2026-01-01T01:00:00Z');
    expect(slowStarts).toBe(1);
    expect(scheduler.running).toEqual(['slow']);
    expect(metrics.snapshot('slow')).toMatchObject({ skipped: 3, running: 1, runs: 0 });
    // Another job is not held up by the slow one.
    expect(metrics.snapshot('fast')).toMatchObject({ runs: 2, skipped: 0 });
    gate.resolve();
    await settle();
    await clock.advanceTo('2026-01-01T01:15:00Z');
    expect(slowStarts).toBe(2);
    expect(maxConcurrent).toBe(1);
    expect(metrics.snapshot('slow')).toMatchObject({ runs: 2, rows: 20, bytes: 200, credits: 20, failures: 0 });
    await scheduler.stop(1000);
  });

  it('counts a failed run as a failure and keeps scheduling the job', async () => {
    const clock = new ManualClock('2026-01-01T00:00:00Z');
    const metrics = new Metrics();
    let n = 0;
    const failures: unknown[] = [];
    const scheduler = new Scheduler({
      jobs: [{ name: 'flaky', schedule: '0 * * * *' }],
      clock,
      metrics,
      events: { onFinish: (_job, outcome) => void (outcome.ok ? undefined : failures.push(outcome.error)) },
      run: async () => {
        n += 1;
        if (n === 1) throw new Error('boom');
        return ok;
      },
    });
    scheduler.start();
    await clock.advanceTo('2026-01-01T02:00:00Z');
    expect(n).toBe(2);
    expect(failures).toHaveLength(1);
    expect(metrics.snapshot('flaky')).toMatchObject({ runs: 2, failures: 1, rows: 10 });
    await scheduler.stop(1000);
  });

  it('on stop, starts nothing more, aborts the run in flight and waits for it to settle', async () => {
    const clock = new ManualClock('2026-01-01T00:00:00Z');
    let aborted = false;
    let settled = false;
    let starts = 0;
    const scheduler = new Scheduler({
      jobs: [{ name: 'long', schedule: '*/15 * * * *' }],
      clock,
      run: (_job, signal) => {
        starts += 1;
        return new Promise<RunOutcome>((_resolve, reject) => {
          signal.addEventListener('abort', () => {
            aborted = true;
            // Cleanup (cancelling the remote execution) takes a moment.
            setTimeout(() => {
              settled = true;
              reject(signal.reason);
            }, 20);
          });
        });
      },
    });
    scheduler.start();
    await clock.advanceTo('2026-01-01T00:15:00Z');
    expect(starts).toBe(1);
    const result = await scheduler.stop(5000);
    expect(aborted).toBe(true);
    expect(settled).toBe(true);
    expect(result.abandoned).toEqual([]);
    expect(scheduler.running).toEqual([]);
    await clock.advanceTo('2026-01-01T03:00:00Z');
    expect(starts).toBe(1);
    expect(clock.sleeping).toBe(0);
  });

  it('gives up on a run that ignores the abort after the grace period', async () => {
    const clock = new ManualClock('2026-01-01T00:00:00Z');
    const scheduler = new Scheduler({
      jobs: [{ name: 'stuck', schedule: '* * * * *' }],
      clock,
      run: () => new Promise<RunOutcome>(() => undefined),
    });
    scheduler.start();
    await clock.advance(60_000);
    const started = performance.now();
    const result = await scheduler.stop(50);
    expect(result.abandoned).toEqual(['stuck']);
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it('computes the next tick of a job', () => {
    expect(Scheduler.nextRun({ name: 'x', schedule: '0 3 * * 1' }, new Date('2026-01-01T00:00:00Z'))?.toISOString()).toBe('2026-01-05T03:00:00.000Z');
  });
});
