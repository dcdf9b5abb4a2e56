import { describe, expect, it } from 'vitest';
import { PeriodicTask } from '../../src/service/periodic.ts';

describe('PeriodicTask', () => {
  it('joins a run in progress instead of starting a second one', async () => {
    let calls = 0;
    let release!: () => void;
    const task = new PeriodicTask(async () => {
      calls++;
      await new Promise<void>((ok) => (release = ok));
      return calls;
    });
    const a = task.run();
    const b = task.run();
    release();
    expect(await a).toBe(1);
    expect(await b).toBe(1);
    expect(calls).toBe(1);
    const c = task.run();
    release();
    expect(await c).toBe(2);
  });

  it('hands a failed timed run to onError and keeps the timer going', async () => {
    let calls = 0;
    const task = new PeriodicTask(async () => {
      calls++;
      throw new Error(`run ${calls} failed`);
    });
    const errors: string[] = [];
    await new Promise<void>((done) => {
      task.start(1, (err) => {
        errors.push((err as Error).message);
        if (errors.length === 2) done();
      });
    });
    await task.close();
    expect(errors).toEqual(['run 1 failed', 'run 2 failed']);
  });

  it('close() stops the timer and waits for the run in progress', async () => {
    let finished = false;
    const task = new PeriodicTask(async () => {
      await new Promise((ok) => setTimeout(ok, 20));
      finished = true;
    });
    const running = task.run();
    await task.close();
    expect(finished).toBe(true);
    await running;
  });
});
