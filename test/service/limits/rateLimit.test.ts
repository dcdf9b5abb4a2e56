import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/service/clock.ts';
import { RateLimiter, rateLimiterFor } from '../../../src/service/limits/rateLimit.ts';
import { parseSettings } from '../../../src/service/settings.ts';

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

describe('per-team plan rates', () => {
  const settings = (plan: Record<string, unknown>, limits: Record<string, unknown> = {}) =>
    parseSettings({
      teams: [
        { name: 'small', plan, keys: [{ key: 'sk_small_key', scopes: ['Read'] }] },
        { name: 'big', keys: [{ key: 'sk_big_key0', scopes: ['Read'] }] },
      ],
      limits,
    });

  it("takes a team's rate from its plan (a plan name or figures), the limits' for other teams and classes", () => {
    const clock = new ManualClock(0);
    const named = rateLimiterFor(settings({ rate_limit: 'free' }, { read_requests_per_minute: 3 }), clock);
    for (let i = 0; i < 40; i += 1) expect(named.take('sk_small_key', 'read', 'small').allowed).toBe(true);
    expect(named.take('sk_small_key', 'read', 'small')).toEqual({ allowed: false, retryAfterSeconds: 2 });
    for (let i = 0; i < 15; i += 1) expect(named.take('sk_small_key', 'write', 'small').allowed).toBe(true);
    expect(named.take('sk_small_key', 'write', 'small').allowed).toBe(false);
    for (let i = 0; i < 3; i += 1) expect(named.take('sk_big_key0', 'read', 'big').allowed).toBe(true);
    expect(named.take('sk_big_key0', 'read', 'big').allowed).toBe(false);

    const figures = rateLimiterFor(settings({ rate_limit: { read: 2 } }), clock);
    expect(figures.take('sk_small_key', 'read', 'small').allowed).toBe(true);
    expect(figures.take('sk_small_key', 'read', 'small').allowed).toBe(true);
    expect(figures.take('sk_small_key', 'read', 'small').allowed).toBe(false);
    // write unset in the plan, and off in the limits.
    for (let i = 0; i < 100; i += 1) expect(figures.take('sk_small_key', 'write', 'small').allowed).toBe(true);
  });

  it('rejects a plan rate that is no plan name or not a whole number, naming the field', () => {
    expect(() => settings({ rate_limit: 'gold' })).toThrow(/teams\[0\]\.plan\.rate_limit: expected a plan name \(free, plus, enterprise\) or { read, write } requests per minute, got "gold"/);
    expect(() => settings({ rate_limit: { read: 1.5 } })).toThrow(/teams\[0\]\.plan\.rate_limit\.read: /);
    expect(() => settings({ rate_limit: { reads: 10 } })).toThrow(/teams\[0\]\.plan\.rate_limit/);
  });
});
