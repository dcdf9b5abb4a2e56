// The engine's one wait queue (memory/gate.ts): page slots, memory admission and the encoder's
// wait for quiet all go through it.
import { describe, expect, test } from 'vitest';
import { Gate } from '../../../src/service/engine/memory/gate.ts';

const tick = (): Promise<void> => new Promise((r) => setTimeout(r, 5));

describe('Gate', () => {
  test('weighted: holds up to its capacity, a need larger than it alone', async () => {
    const gate = Gate.weighted(3);
    const a = await gate.enter(2);
    let bIn = false;
    const b = gate.enter(2).then((leave) => ((bIn = true), leave));
    await tick();
    expect(bIn).toBe(false);
    a();
    (await b)();
    const big = await gate.enter(10);
    expect(gate.held).toEqual([10]);
    big();
    expect(gate.held).toEqual([]);
  });

  test('first come first served: a need that fits does not overtake an earlier one', async () => {
    const gate = Gate.weighted(3);
    const a = await gate.enter(2);
    const order: string[] = [];
    const big = gate.enter(3).then((leave) => (order.push('big'), leave));
    const small = gate.enter(1).then((leave) => (order.push('small'), leave));
    await tick();
    expect(order).toEqual([]);
    expect(gate.waiting).toBe(2);
    a();
    (await big)();
    (await small)();
    expect(order).toEqual(['big', 'small']);
  });

  test('an aborted wait rejects with its reason and lets the next in line in', async () => {
    const gate = Gate.weighted(2);
    const a = await gate.enter(1);
    const stop = new AbortController();
    const big = gate.enter(2, stop.signal);
    const small = gate.enter(1);
    stop.abort(new Error('stopped waiting'));
    await expect(big).rejects.toThrow('stopped waiting');
    (await small)();
    expect(gate.waiting).toBe(0);
    a();
    await expect(gate.enter(1, AbortSignal.abort(new Error('already')))).rejects.toThrow('already');
  });

  test('whenEmpty resolves once nothing is held; a leave counts once', async () => {
    const gate = Gate.weighted(1);
    const a = await gate.enter(1);
    let empty = false;
    void gate.whenEmpty().then(() => (empty = true));
    await tick();
    expect(empty).toBe(false);
    a();
    a();
    await tick();
    expect(empty).toBe(true);
    expect(gate.held).toEqual([]);
    await gate.whenEmpty();
  });
});
