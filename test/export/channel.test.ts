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
});
