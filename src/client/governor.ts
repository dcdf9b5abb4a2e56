import { sleep } from './retry.ts';
import type { ErrorContext } from './errors.ts';
import { RATE_PLANS, type RateClass, type RatePlan } from '../protocol/index.ts';

export { RATE_PLANS, type RateClass, type RatePlan };

/** Requests per minute per key and class; an absent class is not limited until the service says so with a 429. */
export interface RateLimit {
  read?: number | undefined;
  write?: number | undefined;
}

/**
 * How a rate is learned (increase slowly, decrease fast, as TCP and the AWS SDKs' adaptive retry
 * mode do): a 429 with no rate known starts from a first guess (`#firstGuess`); a 429 with a rate
 * known takes `DECREASE` of it, once per `Retry-After` pause however many requests it refused at
 * once. After `GROW_AFTER_MS` without a 429 the rate grows by `INCREASE`, up to the configured one.
 */
const DECREASE = 0.8;
const INCREASE = 1.1;
const GROW_AFTER_MS = 10_000;
/** A learned rate with nothing configured is dropped after this long without a 429: plans change, and a guess must not throttle for ever. */
const LEARNED_FOR_MS = 60_000;

// Layout of the shared state: an Int32 lock, then per class these Float64 fields.
const F = { rpm: 0, tokens: 1, at: 2, pausedUntil: 3, grownAt: 4, tooMany: 5, configured: 6, lastRefused: 7, sentFrom: 8, sent: 9, sentRpm: 10 } as const;
const FIELDS = 11;
/** The rate sent is measured over windows this long (the last full one is what a first 429 cuts). */
const SENT_WINDOW_MS = 2_000;
const CLASSES: readonly RateClass[] = ['read', 'write'];
const BYTES = 8 + CLASSES.length * FIELDS * 8;

/**
 * One token bucket per rate class of one API key, in a SharedArrayBuffer: every client of the key
 * in this process, and every worker thread handed `shared`, takes from the same bucket, so page
 * fetchers, pollers and worker threads together stay within the key's limit. A request reserves a
 * token (the balance may go negative) and waits until that token is due: waiting requests are
 * served in the order they asked, with no polling. The bucket holds a minute's worth at most, as
 * the service's does (less one token, `burstOf`), and starts full.
 *
 * A 429 means the service's bucket is empty whatever ours says: the class pauses for the
 * `Retry-After`, our balance drops to zero, and the rate is lowered (see `DECREASE`): a limit set
 * too high, or none, is tightened to what the key is given, and grows back while no 429 comes.
 */
export class RateGovernor {
  /** Hand this to a worker thread (`ClientOptions.governor`): its clients then share this bucket. */
  readonly shared: SharedArrayBuffer;
  readonly #lock: Int32Array;
  readonly #f: Float64Array;

  constructor(shared: SharedArrayBuffer = new SharedArrayBuffer(BYTES)) {
    if (shared.byteLength !== BYTES) throw new RangeError(`a RateGovernor's shared state is ${BYTES} bytes, got ${shared.byteLength}`);
    this.shared = shared;
    this.#lock = new Int32Array(shared, 0, 1);
    this.#f = new Float64Array(shared, 8);
  }

  /** Sets the per-minute rate of the classes `limit` names (times `share`, this process's part of a key used by several); the bucket refills to it. */
  configure(limit: RateLimit, share = 1): void {
    this.#locked(() => {
      for (const cls of CLASSES) {
        const rpm = limit[cls];
        if (rpm === undefined) continue;
        const mine = rpm * share;
        // Another client of the key saying the same again must not refill a bucket in use.
        if (mine === this.#get(cls, F.configured)) continue;
        this.#set(cls, F.configured, mine);
        this.#set(cls, F.rpm, mine);
        this.#set(cls, F.tokens, burstOf(mine));
        this.#set(cls, F.at, Date.now());
      }
    });
  }

  /** The requests per minute this process may send in `cls` (0: not limited). */
  perMinute(cls: RateClass): number {
    return this.#get(cls, F.rpm);
  }

  /** 429s received in `cls` by every client sharing this bucket. */
  tooMany(cls: RateClass): number {
    return this.#get(cls, F.tooMany);
  }

  /** Waits until a request of `cls` may be sent; rejects (returning its token) if `signal` fires first. */
  async take(cls: RateClass, signal: AbortSignal | undefined, ctx: ErrorContext): Promise<void> {
    let waitMs = this.#locked(() => this.#reserve(cls, Date.now()));
    while (waitMs > 0) {
      try {
        await sleep(waitMs, signal, ctx);
      } catch (err) {
        this.#locked(() => this.#set(cls, F.tokens, this.#get(cls, F.tokens) + 1));
        throw err;
      }
      // A 429 while this request waited pauses it too.
      waitMs = this.#get(cls, F.pausedUntil) - Date.now();
    }
  }

  /** The service answered 429: pause the class for `retryAfterMs` (1 s when it gave none), empty the bucket, lower the rate. */
  refused(cls: RateClass, retryAfterMs: number | undefined): void {
    this.#locked(() => {
      const now = Date.now();
      this.#set(cls, F.tooMany, this.#get(cls, F.tooMany) + 1);
      // `Retry-After: 0` asks for no wait: the answer says nothing of a rate to learn.
      if (retryAfterMs === 0) return;
      const pause = retryAfterMs ?? 1_000;
      this.#set(cls, F.lastRefused, now);
      this.#refill(cls, now);
      this.#set(cls, F.tokens, Math.min(0, this.#get(cls, F.tokens)));
      const samePause = now < this.#get(cls, F.pausedUntil);
      this.#set(cls, F.pausedUntil, Math.max(this.#get(cls, F.pausedUntil), now + pause));
      if (samePause) return;
      const rpm = this.#get(cls, F.rpm);
      this.#set(cls, F.rpm, rpm > 0 ? Math.max(1, rpm * DECREASE) : this.#firstGuess(cls, now, pause));
      this.#set(cls, F.grownAt, now);
    });
  }

  /** Takes a token now; returns how long to wait before it is due (ms). */
  #reserve(cls: RateClass, now: number): number {
    this.#countSent(cls, now);
    const paused = this.#get(cls, F.pausedUntil) - now;
    this.#grow(cls, now);
    const rpm = this.#get(cls, F.rpm);
    if (rpm === 0) return paused;
    this.#refill(cls, now);
    const tokens = this.#get(cls, F.tokens) - 1;
    this.#set(cls, F.tokens, tokens);
    return Math.max(paused, tokens < 0 ? (-tokens * 60_000) / rpm : 0);
  }

  #countSent(cls: RateClass, now: number): void {
    const from = this.#get(cls, F.sentFrom);
    if (now - from >= SENT_WINDOW_MS) {
      this.#set(cls, F.sentRpm, from === 0 ? 0 : (this.#get(cls, F.sent) * 60_000) / (now - from));
      this.#set(cls, F.sentFrom, now);
      this.#set(cls, F.sent, 0);
    }
    this.#set(cls, F.sent, this.#get(cls, F.sent) + 1);
  }

  /** Requests per minute sent lately: the last full window's rate, or the current one's when that is higher. */
  #sentRpm(cls: RateClass, now: number): number {
    const current = (this.#get(cls, F.sent) * 60_000) / Math.max(1, now - this.#get(cls, F.sentFrom));
    return Math.max(this.#get(cls, F.sentRpm), Math.min(current, this.#get(cls, F.sent) * 60_000 / 1_000));
  }

  /**
   * The rate to go on after a first 429. A `Retry-After` above a second is the time to the service's
   * next token, so one request per `Retry-After` is just under its rate (it rounds up to whole
   * seconds); one of a second or less says only that the rate is 60 a minute or more, so the rate
   * sent just before, less `DECREASE`, is the better guess.
   */
  #firstGuess(cls: RateClass, now: number, pause: number): number {
    if (pause > 1_000) return 60_000 / pause;
    return Math.max(60, this.#sentRpm(cls, now) * DECREASE);
  }

  /** A rate lowered by 429s grows back while none come, up to the configured one (none: unlimited, after a while). */
  #grow(cls: RateClass, now: number): void {
    const rpm = this.#get(cls, F.rpm);
    const configured = this.#get(cls, F.configured);
    if (rpm === configured || now - this.#get(cls, F.grownAt) < GROW_AFTER_MS || now - this.#get(cls, F.lastRefused) < GROW_AFTER_MS) return;
    this.#refill(cls, now);
    const quiet = now - this.#get(cls, F.lastRefused);
    const next = configured === 0 && quiet > LEARNED_FOR_MS ? 0 : configured === 0 ? rpm * INCREASE : Math.min(configured, rpm * INCREASE);
    this.#set(cls, F.rpm, next);
    this.#set(cls, F.grownAt, now);
  }

  #refill(cls: RateClass, now: number): void {
    const rpm = this.#get(cls, F.rpm);
    const at = this.#get(cls, F.at);
    if (rpm > 0 && now > at) this.#set(cls, F.tokens, Math.min(burstOf(rpm), this.#get(cls, F.tokens) + ((now - at) * rpm) / 60_000));
    this.#set(cls, F.at, Math.max(now, at));
  }

  #get(cls: RateClass, field: number): number {
    return this.#f[CLASSES.indexOf(cls) * FIELDS + field]!;
  }

  #set(cls: RateClass, field: number, value: number): void {
    this.#f[CLASSES.indexOf(cls) * FIELDS + field] = value;
  }

  /** A critical section of a few arithmetic steps: spinning is cheaper than anything that sleeps. */
  #locked<T>(fn: () => T): T {
    while (Atomics.compareExchange(this.#lock, 0, 0, 1) !== 0);
    try {
      return fn();
    } finally {
      Atomics.store(this.#lock, 0, 0);
    }
  }
}

/**
 * A minute's worth, as the service's bucket holds, less one token: a request that reaches the
 * service sooner after the one before than it left here (the first one also had to connect) would
 * otherwise find the service's bucket a fraction of a token short.
 */
function burstOf(rpm: number): number {
  return Math.max(1, rpm - 1);
}

const byKey = new Map<string, RateGovernor>();
const byBuffer = new WeakMap<SharedArrayBuffer, RateGovernor>();

/**
 * The governor of one key at one service in this process (one per key, whatever the number of
 * clients), or the one over `shared` when a parent thread handed its state over.
 */
export function governorFor(baseUrl: string, apiKey: string, shared?: unknown): RateGovernor {
  if (shared instanceof SharedArrayBuffer) {
    let g = byBuffer.get(shared);
    if (g === undefined) byBuffer.set(shared, (g = new RateGovernor(shared)));
    return g;
  }
  const id = `${baseUrl}\u0000${apiKey}`;
  let g = byKey.get(id);
  if (g === undefined) {
    g = new RateGovernor();
    byKey.set(id, g);
    byBuffer.set(g.shared, g);
  }
  return g;
}

/** `free`, `plus`, `enterprise` or per-class figures, as a `RateLimit`. */
export function rateLimitOf(value: RatePlan | RateLimit): RateLimit {
  return typeof value === 'string' ? RATE_PLANS[value] : value;
}

/** The class of a request, as the service counts it: reads are GETs, except the Admin usage report. */
export function rateClassOf(httpMethod: string, operation: string): RateClass {
  return httpMethod === 'GET' && operation !== 'getUsage' ? 'read' : 'write';
}
