import { describe, expect, it } from 'vitest';
import { Channel } from '../../src/export/channel.ts';

describe('Channel', () => {
  it('hands items over one at a time and resolves push when taken', async () => {
    const ch = new Channel<number>();
    let taken = false;
    const pushed = ch.push(1).then(() => (taken = true));
    await Promise.resolve();
    expect(taken).toBe(false);
    const it = ch[Symbol.asyncIterator]();
    expect(await it.next()).toEqual({ value: 1, done: false });
    await pushed;
    expect(taken).toBe(true);
    ch.close();
    expect((await it.next()).done).toBe(true);
  });

  it('makes the consumer throw on fail, and refuses pushes once the consumer is gone', async () => {
    const ch = new Channel<number>();
    const it = ch[Symbol.asyncIterator]();
    const next = it.next();
    ch.fail(new Error('boom'));
    await expect(next).rejects.toThrow('boom');
    const other = new Channel<number>();
    const pending = other.push(1);
    other.cancel(new Error('writer died'));
    await expect(pending).rejects.toThrow('writer died');
    await expect(other.push(2)).rejects.toThrow('writer died');
  });

  it('with a capacity, pushes resolve while fewer items wait, then once the first is taken', async () => {
    const ch = new Channel<number>({ capacity: 2 });
    await ch.push(1);
    await ch.push(2);
    let third = false;
    const pushed = ch.push(3).then(() => (third = true));
    await new Promise((r) => setImmediate(r));
    expect(third).toBe(false);
    const it = ch[Symbol.asyncIterator]();
    expect(await it.next()).toEqual({ value: 1, done: false });
    await pushed;
    ch.close();
    expect([await it.next(), await it.next(), await it.next()]).toEqual([
      { value: 2, done: false },
      { value: 3, done: false },
      { value: undefined, done: true },
    ]);
    expect(() => new Channel({ capacity: -1 })).toThrow('channel capacity must be a non-negative integer, got -1');
  });

  it('fail: the consumer reads what was pushed, then the error; later pushes get the error', async () => {
    const ch = new Channel<number>({ capacity: 1 });
    await ch.push(1);
    ch.fail(new Error('source failed'));
    await expect(ch.push(2)).rejects.toThrow('source failed');
    const it = ch[Symbol.asyncIterator]();
    expect(await it.next()).toEqual({ value: 1, done: false });
    await expect(it.next()).rejects.toThrow('source failed');
  });

  it('an abort ends it at once: the waiting consumer and a waiting push get the reason, what was queued is dropped', async () => {
    const controller = new AbortController();
    const ch = new Channel<number>({ capacity: 1, signal: controller.signal });
    await ch.push(1);
    const waiting = ch.push(2);
    controller.abort(new Error('run stopped'));
    await expect(waiting).rejects.toThrow('run stopped');
    await expect(ch[Symbol.asyncIterator]().next()).rejects.toThrow('run stopped');
    const parked = new Channel<number>({ signal: controller.signal });
    await expect(parked[Symbol.asyncIterator]().next()).rejects.toThrow('run stopped');
    const later = new AbortController();
    const reading = new Channel<number>({ signal: later.signal })[Symbol.asyncIterator]().next();
    later.abort(new Error('late'));
    await expect(reading).rejects.toThrow('late');
  });

  it('a consumer that stops (break) refuses pending and later pushes with what the owner says', async () => {
    const ch = new Channel<number>({ capacity: 1, stopped: () => new Error('the outputs stopped reading') });
    const reading = (async () => {
      for await (const v of ch) if (v === 1) break;
    })();
    await ch.push(1);
    await reading;
    await expect(ch.push(2)).rejects.toThrow('the outputs stopped reading');
  });
});
