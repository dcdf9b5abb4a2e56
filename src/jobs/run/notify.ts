import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Job } from '../../config/jobSchema.ts';
import type { NotifyEvent, WebhookConfig } from '../../config/notifySchema.ts';
import type { OutputDrift } from '../drift/drift.ts';
import { policyOf } from './errorPolicy.ts';
import type { RunEvents } from './jobRun.ts';

/**
 * Webhook notifications of a run: failures, schema drift and (when asked) successes, each POSTed
 * as one JSON body, signed with the webhook's secret, retried with backoff on network errors,
 * timeouts, 429 and 5xx. A receiver that is down never fails the run: the run waits for the
 * deliveries (bounded by the retries), then logs and counts what could not be delivered.
 */

export const SIGNATURE_HEADER = 'sluice-signature';
export const EVENT_HEADER = 'sluice-event';
export const DELIVERY_HEADER = 'sluice-delivery';
/** A receiver refuses a signature older than this (replay); the default of `verifySignature`. */
export const SIGNATURE_TOLERANCE_SECONDS = 300;
export const DEFAULT_NOTIFY_EVENTS: readonly NotifyEvent[] = ['failure', 'drift'];
export const DEFAULT_WEBHOOK_RETRIES = 3;
export const DEFAULT_WEBHOOK_TIMEOUT_SECONDS = 10;
/** The first wait between tries, doubled for each next one; a Retry-After is taken up to the cap. */
const BACKOFF_MS = 1_000;
const MAX_BACKOFF_MS = 30_000;

/** The JSON body of every event (`version` changes only when a field changes meaning). */
export interface NotificationBody {
  readonly version: 1;
  readonly event: NotifyEvent;
  readonly job: string;
  /** One run of the job (all its attempts): the same in each of its events. */
  readonly run_id: string;
  readonly started_at: string;
  /** When the event was made (ISO 8601); the signature carries its own timestamp. */
  readonly sent_at: string;
  readonly ended_at?: string;
  readonly execution_id?: string;
  readonly attempts?: number;
  readonly error?: { readonly code: string; readonly message: string };
  readonly drift?: OutputDrift;
  readonly result?: { readonly rows: number; readonly files: number; readonly bytes: number; readonly credits: number };
}

/** How one event's delivery went. */
export interface Delivery {
  readonly event: NotifyEvent;
  readonly delivered: boolean;
  /** HTTP requests sent (1 + retries used). */
  readonly attempts: number;
  /** The last answer's status (undefined: no answer). */
  readonly status?: number;
  readonly error?: string;
}

export interface NotifierOptions {
  readonly onDelivery?: ((delivery: Delivery) => void) | undefined;
  readonly onWarning?: ((message: string, fields: Record<string, unknown>) => void) | undefined;
  /** The first wait between tries (tests shorten it). */
  readonly backoffMs?: number;
  readonly now?: () => Date;
  /** When the run began (its events' `started_at`; default: now). */
  readonly startedAt?: Date;
}

/** `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`: what the signature header carries. */
export function signatureHeader(secret: string, body: string, at: Date): string {
  const t = Math.floor(at.getTime() / 1000);
  return `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`;
}

/**
 * What a receiver does with a delivery: recompute the HMAC over `<t>.<raw body>` and compare in
 * constant time, and refuse a timestamp further than `toleranceSeconds` from its clock (a replay).
 */
export function verifySignature(secret: string, header: string | undefined, body: string, now = new Date(), toleranceSeconds = SIGNATURE_TOLERANCE_SECONDS): boolean {
  const parts = new Map((header ?? '').split(',').map((p) => p.trim().split('=', 2) as [string, string]));
  const t = Number(parts.get('t'));
  const given = parts.get('v1');
  if (!Number.isInteger(t) || given === undefined || Math.abs(now.getTime() / 1000 - t) > toleranceSeconds) return false;
  const expected = Buffer.from(createHmac('sha256', secret).update(`${t}.${body}`).digest('hex'));
  const actual = Buffer.from(given);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** Where a webhook goes, as logs may show it: the origin only (a path or query may hold a token). */
export function webhookOrigin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '[invalid url]';
  }
}

/** The notifier of one run of `job`, or undefined when the job notifies nothing. */
export function notifierFor(job: Job, options: NotifierOptions = {}): Notifier | undefined {
  return job.notify === undefined ? undefined : new Notifier(job.name, job.notify.webhook, options);
}

export class Notifier {
  readonly runId = randomUUID();
  readonly #job: string;
  readonly #config: WebhookConfig;
  readonly #options: NotifierOptions;
  readonly #events: ReadonlySet<NotifyEvent>;
  readonly #pending = new Set<Promise<void>>();
  readonly #startedAt: Date;

  constructor(job: string, config: WebhookConfig, options: NotifierOptions = {}) {
    this.#job = job;
    this.#config = config;
    this.#options = options;
    this.#events = new Set(config.events ?? DEFAULT_NOTIFY_EVENTS);
    this.#startedAt = options.startedAt ?? new Date();
  }

  drift(drift: OutputDrift, executionId: string | undefined): void {
    this.#send('drift', { ...(executionId === undefined ? {} : { execution_id: executionId }), drift });
  }

  failed(error: unknown, run: { executionId?: string | undefined; attempts: number }): void {
    const code = (error as { code?: unknown } | null)?.code;
    this.#send('failure', {
      ended_at: this.#now().toISOString(),
      ...(run.executionId === undefined ? {} : { execution_id: run.executionId }),
      attempts: run.attempts,
      error: { code: typeof code === 'string' ? code : error instanceof Error ? error.name : 'ERROR', message: error instanceof Error ? error.message : String(error) },
    });
  }

  succeeded(summary: { readonly executionId: string; readonly attempts: number; readonly rows: number; readonly files: number; readonly bytes: number; readonly credits: number }): void {
    this.#send('success', {
      ended_at: this.#now().toISOString(),
      execution_id: summary.executionId,
      attempts: summary.attempts,
      result: { rows: summary.rows, files: summary.files, bytes: summary.bytes, credits: summary.credits },
    });
  }

  /** Waits for every delivery under way (each bounded by its timeout and retries); never throws. */
  async settled(): Promise<void> {
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
  }

  #now(): Date {
    return this.#options.now?.() ?? new Date();
  }

  #send(event: NotifyEvent, fields: Partial<NotificationBody>): void {
    if (!this.#events.has(event)) return;
    const body: NotificationBody = { version: 1, event, job: this.#job, run_id: this.runId, started_at: this.#startedAt.toISOString(), sent_at: this.#now().toISOString(), ...fields };
    const delivery = this.#deliver(event, JSON.stringify(body)).then((d) => this.#report(d));
    this.#pending.add(delivery);
    void delivery.finally(() => this.#pending.delete(delivery));
  }

  #report(delivery: Delivery): void {
    try {
      this.#options.onDelivery?.(delivery);
      if (!delivery.delivered) {
        this.#options.onWarning?.('notification not delivered', { event: delivery.event, webhook: webhookOrigin(this.#config.url), attempts: delivery.attempts, ...(delivery.status === undefined ? {} : { status: delivery.status }), ...(delivery.error === undefined ? {} : { error: delivery.error }) });
      }
    } catch {
      // A listener's failure is not the run's.
    }
  }

  async #deliver(event: NotifyEvent, body: string): Promise<Delivery> {
    const retries = this.#config.retries ?? DEFAULT_WEBHOOK_RETRIES;
    const timeoutMs = (this.#config.timeout_seconds ?? DEFAULT_WEBHOOK_TIMEOUT_SECONDS) * 1000;
    const id = randomUUID();
    let last: { status?: number; error?: string; retryAfterMs?: number } = {};
    for (let attempt = 1; ; attempt++) {
      last = await this.#post(event, body, id, timeoutMs);
      if (last.status !== undefined && last.status < 300) return { event, delivered: true, attempts: attempt, status: last.status };
      const again = last.status === undefined || last.status === 429 || last.status >= 500;
      if (!again || attempt > retries) return { event, delivered: false, attempts: attempt, ...last, ...(last.error === undefined && last.status !== undefined ? { error: `HTTP ${last.status}` } : {}) };
      const backoff = (this.#options.backoffMs ?? BACKOFF_MS) * 2 ** (attempt - 1);
      await new Promise((resolve) => setTimeout(resolve, Math.min(MAX_BACKOFF_MS, Math.max(backoff, last.retryAfterMs ?? 0))));
    }
  }

  async #post(event: NotifyEvent, body: string, id: string, timeoutMs: number): Promise<{ status?: number; error?: string; retryAfterMs?: number }> {
    const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'sluice', [EVENT_HEADER]: event, [DELIVERY_HEADER]: id };
    // Signed at each try: a retry carries a fresh timestamp, so a slow retry is not refused as a replay.
    if (this.#config.secret !== undefined) headers[SIGNATURE_HEADER] = signatureHeader(this.#config.secret, body, this.#now());
    try {
      const response = await fetch(this.#config.url, { method: 'POST', headers, body, signal: AbortSignal.timeout(timeoutMs), redirect: 'error' });
      await response.body?.cancel();
      const retryAfter = Number(response.headers.get('retry-after'));
      return { status: response.status, ...(Number.isFinite(retryAfter) && retryAfter > 0 ? { retryAfterMs: retryAfter * 1000 } : {}) };
    } catch (error) {
      // The cause says more than fetch's "fetch failed" (ECONNREFUSED, a timeout); never the URL's path.
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      return { error: cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error)) };
    }
  }
}

/**
 * A run's events, each output's schema drift reported once per run (each attempt finds it again)
 * and also sent to the webhook, when there is one.
 */
export function notifyingEvents(events: RunEvents | undefined, notifier: Notifier | undefined, run: { readonly executionId?: string | undefined }): RunEvents {
  const seen = new Set<number>();
  return {
    ...events,
    onDrift: (drift) => {
      if (seen.has(drift.output)) return;
      seen.add(drift.output);
      notifier?.drift(drift, run.executionId);
      events?.onDrift?.(drift);
    },
  };
}

/** Whether a failure is worth a failure event: a run stopped from outside (SIGTERM) is not one. */
export function notifiesFailure(error: unknown, signal: AbortSignal): boolean {
  return !signal.aborted && policyOf(error).exit !== 130;
}
