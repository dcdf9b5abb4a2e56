import type { Clock } from '../clock.ts';
import type { RateClass } from '../../protocol/index.ts';
import type { ServiceSettings } from '../settings.ts';

/** Read operations (Read scope) and write operations (Write and Admin) are limited apart. */
export type { RateClass };

export type RateDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

interface Bucket {
  tokens: number;
  at: number;
  /** The rate it fills at (kept for pruning: a team's rate comes from its plan). */
  rpm: number;
}

/** Buckets idle long enough to be full again are forgotten past this many keys. */
const PRUNE_ABOVE = 10_000;

/**
 * Requests per minute per key and class, as a token bucket: a key may burst up to its per-minute
 * allowance, then gets one request per 60/N seconds. A refused request consumes nothing, and its
 * Retry-After is when the next token arrives (whole seconds, at least 1).
 */
export class RateLimiter {
  readonly #clock: Clock;
  readonly #perMinute: (cls: RateClass, team: string | undefined) => number;
  readonly #buckets = new Map<string, Bucket>();

  /** `perMinute(cls, team)` of 0 turns that class off (for that team). */
  constructor(deps: { clock: Clock; perMinute(cls: RateClass, team: string | undefined): number }) {
    this.#clock = deps.clock;
    this.#perMinute = deps.perMinute;
  }

  /** `team` is the key's team: its plan may set its own rates. */
  take(key: string, cls: RateClass, team?: string): RateDecision {
    const rpm = this.#perMinute(cls, team);
    if (!(rpm > 0)) return { allowed: true };
    const now = this.#clock.now();
    const perMs = rpm / 60_000;
    const id = `${cls}\u0000${key}`;
    const b = this.#buckets.get(id) ?? { tokens: rpm, at: now, rpm };
    const tokens = Math.min(rpm, b.tokens + Math.max(0, now - b.at) * perMs);
    if (tokens >= 1) {
      this.#buckets.set(id, { tokens: tokens - 1, at: now, rpm });
      if (this.#buckets.size > PRUNE_ABOVE) this.#prune(now);
      return { allowed: true };
    }
    this.#buckets.set(id, { tokens, at: now, rpm });
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - tokens) / perMs / 1000)) };
  }

  #prune(now: number): void {
    for (const [id, b] of this.#buckets) {
      if (b.tokens + (now - b.at) * (b.rpm / 60_000) >= b.rpm) this.#buckets.delete(id);
    }
  }
}

/**
 * The per-key limiter of the settings' read and write request rates: a team's plan sets its own
 * (`plan.rate_limit`, a plan name read as its figures, or figures), else `limits.*_requests_per_minute` hold.
 */
export function rateLimiterFor(settings: ServiceSettings, clock: Clock): RateLimiter {
  const plans = new Map(settings.teams.map((t) => [t.name, t.plan.rate_limit]));
  return new RateLimiter({
    clock,
    perMinute(cls, team) {
      const own = team === undefined ? undefined : plans.get(team);
      const given = own?.[cls];
      return given ?? (cls === 'read' ? settings.limits.read_requests_per_minute : settings.limits.write_requests_per_minute);
    },
  });
}
