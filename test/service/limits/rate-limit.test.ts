import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/service/clock.ts';
import { RateLimiter } from '../../../src/service/limits/rate-limit.ts';

describe('RateLimiter', () => {
  it('allows a burst of N per minute, then refuses with the seconds until the next token', () => {
    const clock = new ManualClock(0);
    const rl = new RateLimiter({ clock, perMinute: (c) => (c === 'write' ? 6 : 0) });
    for (let i = 0; i < 6; i += 1) expect(rl.take('k', 'write')).toEqual({ allowed: true });
    expect(rl.take('k', 'write')).toEqual({ allowed: false, retryAfterSeconds: 10 });
    clock.advance(4_000);
    expect(rl.take('k', 'write')).toEqual({ allowed: false, retryAfterSeconds: 6 });
    clock.advance(6_000);
    expect(rl.take('k', 'write')).toEqual({ allowed: true });
    expect(rl.take('k', 'write')).toMatchObject({ allowed: false });
  });

  it('limits read and write apart, and keys apart; 0 is off', () => {
    const clock = new ManualClock(0);
    const rl = new RateLimiter({ clock, perMinute: (c) => (c === 'read' ? 2 : 1) });
    expect(rl.take('a', 'write').allowed).toBe(true);
    expect(rl.take('a', 'write').allowed).toBe(false);
    expect(rl.take('a', 'read').allowed).toBe(true);
    expect(rl.take('a', 'read').allowed).toBe(true);
    expect(rl.take('a', 'read').allowed).toBe(false);
    expect(rl.take('b', 'write').allowed).toBe(true);
    const off = new RateLimiter({ clock, perMinute: () => 0 });
    for (let i = 0; i < 1000; i += 1) expect(off.take('a', 'read').allowed).toBe(true);
  });

  it('never answers a Retry-After below one second', () => {
    const clock = new ManualClock(0);
    const rl = new RateLimiter({ clock, perMinute: () => 6000 });
    for (let i = 0; i < 6000; i += 1) rl.take('k', 'read');
    expect(rl.take('k', 'read')).toEqual({ allowed: false, retryAfterSeconds: 1 });
    clock.advance(10);
    expect(rl.take('k', 'read').allowed).toBe(true);
  });
});
