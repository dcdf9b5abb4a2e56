import { setTimeout as sleep } from 'node:timers/promises';
import { FaultsSchema, type FaultSettings, type FaultSettingsInput } from '../settings.ts';
import { errorReply, type Reply } from './reply.ts';
import { MESSAGES } from '../../protocol/index.ts';

export interface FaultCounts {
  delayed: number;
  errors: number;
  resets: number;
}

/**
 * Misbehaviour on purpose, so clients can be tested against it. Errors are injected *before* a
 * request is handled, so a faulted request never changes state (a faulted POST execute creates no
 * execution). Resets hit GET responses only, halfway through the body: they model a connection lost
 * while reading a page, and never leave a client unsure whether a write happened.
 */
export class Faults {
  #settings: FaultSettings;
  readonly counts: FaultCounts = { delayed: 0, errors: 0, resets: 0 };
  readonly #random: () => number;

  constructor(settings: FaultSettings, random: () => number = Math.random) {
    this.#settings = settings;
    this.#random = random;
  }

  get settings(): FaultSettings {
    return this.#settings;
  }

  /** Replaces the given fields; the others keep their values. */
  set(patch: FaultSettingsInput): void {
    this.#settings = FaultsSchema.parse({ ...this.#settings, ...patch });
  }

  async delay(): Promise<void> {
    const ms = this.#settings.latency_ms;
    if (ms <= 0) return;
    this.counts.delayed++;
    await sleep(ms);
  }

  /** An error answer to give instead of handling the request, or undefined. */
  error(): Reply | undefined {
    const s = this.#settings;
    if (s.error_rate <= 0 || this.#random() >= s.error_rate) return undefined;
    this.counts.errors++;
    const status = s.error_statuses[Math.floor(this.#random() * s.error_statuses.length)] ?? 500;
    if (status === 429) return errorReply(429, MESSAGES.tooManyRequests, { 'retry-after': String(s.retry_after_seconds) });
    return errorReply(status, MESSAGES.internal);
  }

  shouldReset(method: string | undefined): boolean {
    const s = this.#settings;
    if (method !== 'GET' || s.reset_rate <= 0 || this.#random() >= s.reset_rate) return false;
    this.counts.resets++;
    return true;
  }
}
