import { z } from 'zod';
import type { Clock } from '../clock.ts';
import type { ServiceSettings } from '../settings.ts';
import { JsonStore } from '../store.ts';
import { cycleAt, daysCycle, type Cycle, type CycleSpec } from './cycle.ts';
import { CreditLimitError } from './errors.ts';

/** What one team spent in one cycle. */
const CycleUsageSchema = z.object({ used: z.number().nonnegative(), executions: z.number().int().nonnegative() });
export type CycleUsage = z.infer<typeof CycleUsageSchema>;

/** The persisted ledger: team -> cycle start (ms, as a string key) -> usage. */
export const LedgerDocSchema = z.object({ teams: z.record(z.string(), z.record(z.string(), CycleUsageSchema)) });
export type LedgerDoc = z.infer<typeof LedgerDocSchema>;

const DOC_ID = 'ledger';
/** Old cycles kept on disk (for usage history); older ones are pruned on write. */
const KEEP_CYCLES = 13;

interface Reservation {
  team: string;
  cycleStart: number;
  amount: number;
}

export interface CreditLedgerDeps {
  clock: Clock;
  cycle: CycleSpec;
  /** Credits a team may spend per cycle (its plan's credits_per_cycle). */
  limitOf(team: string): number;
  /** Where the ledger is persisted (one document); omitted: memory only. */
  store?: JsonStore<LedgerDoc>;
}

/**
 * Credits per team and billing cycle. A submission reserves its full cost up front; when it ends,
 * the reservation is settled with what it really cost (0 when it did not run) in the cycle it was
 * reserved in. Refusing at reservation time means concurrent submissions can never together
 * overshoot the limit: `used + reserved + cost > limit` is refused (402).
 *
 * Reservations are not persisted: executions unfinished at a restart end FAILED with cost 0, so
 * their reservations would be released anyway.
 */
export class CreditLedger {
  readonly #deps: CreditLedgerDeps;
  readonly #usage = new Map<string, Map<number, CycleUsage>>();
  readonly #reservations = new Map<string, Reservation>();

  constructor(deps: CreditLedgerDeps) {
    this.#deps = deps;
  }

  async load(): Promise<void> {
    const store = this.#deps.store;
    if (store === undefined) return;
    const docs = await store.loadAll((raw) => LedgerDocSchema.parse(raw));
    const doc = docs.get(DOC_ID);
    if (doc === undefined) return;
    for (const [team, cycles] of Object.entries(doc.teams)) {
      const m = new Map<number, CycleUsage>();
      for (const [start, usage] of Object.entries(cycles)) m.set(Number(start), { ...usage });
      this.#usage.set(team, m);
    }
  }

  /** The current cycle by the clock. */
  cycle(): Cycle {
    return cycleAt(this.#deps.cycle, this.#deps.clock.now());
  }

  limit(team: string): number {
    return this.#deps.limitOf(team);
  }

  /** Credits charged to the team in the current cycle (settled executions only). */
  used(team: string): number {
    return this.#usageOf(team, this.cycle().start)?.used ?? 0;
  }

  /**
   * The cycles overlapping `[from, to)` (epoch ms) that the ledger knows, newest first, with the
   * credits charged in each: those with usage recorded (the last ones kept) and the current one.
   */
  periods(team: string, from: number, to: number): Array<Cycle & { used: number }> {
    const current = this.cycle();
    const starts = new Set([current.start, ...(this.#usage.get(team)?.keys() ?? [])]);
    return [...starts]
      .sort((a, b) => b - a)
      .map((start) => ({ ...cycleAt(this.#deps.cycle, start), used: this.#usageOf(team, start)?.used ?? 0 }))
      .filter((c) => c.start < to && c.end > from);
  }

  /** Executions admitted in the current cycle. */
  executions(team: string): number {
    return this.#usageOf(team, this.cycle().start)?.executions ?? 0;
  }

  /** Credits held by executions that have not ended yet, in the current cycle. */
  reserved(team: string): number {
    const start = this.cycle().start;
    let sum = 0;
    for (const r of this.#reservations.values()) if (r.team === team && r.cycleStart === start) sum += r.amount;
    return sum;
  }

  /** Throws CreditLimitError (402) when the cost does not fit what is left of the cycle. */
  check(team: string, cost: number): void {
    const available = this.limit(team) - this.used(team) - this.reserved(team);
    if (cost > available) throw new CreditLimitError(team, cost, Math.max(0, available));
  }

  /**
   * Holds `cost` credits for the execution `ref` and counts it as admitted; throws
   * CreditLimitError (402) when it would exceed the cycle's credits. Persisted (the count).
   */
  async reserve(team: string, cost: number, ref: string): Promise<void> {
    if (this.#reservations.has(ref)) throw new Error(`credits for ${ref} are already reserved`);
    this.check(team, cost);
    const cycleStart = this.cycle().start;
    this.#reservations.set(ref, { team, cycleStart, amount: cost });
    this.#entry(team, cycleStart).executions += 1;
    await this.#save();
  }

  /**
   * Ends the reservation `ref`, charging `actual` credits to the cycle it was made in. Unknown
   * refs (already settled, or from before a restart) are ignored, so settling is idempotent.
   */
  async settle(ref: string, actual: number): Promise<void> {
    const r = this.#reservations.get(ref);
    if (r === undefined) return;
    this.#reservations.delete(ref);
    if (actual > 0) {
      this.#entry(r.team, r.cycleStart).used += actual;
      await this.#save();
    }
  }

  /** Charges `cost` credits that are not an execution's (uploads: checked with `check` before their write). */
  async charge(team: string, cost: number): Promise<void> {
    this.#entry(team, this.cycle().start).used += cost;
    await this.#save();
  }

  /** Reservation without charge (the submission was not recorded after all). */
  async release(ref: string): Promise<void> {
    const r = this.#reservations.get(ref);
    if (r === undefined) return;
    this.#reservations.delete(ref);
    const e = this.#usageOf(r.team, r.cycleStart);
    if (e !== undefined && e.executions > 0) e.executions -= 1;
    await this.#save();
  }

  toJSON(): LedgerDoc {
    const teams: LedgerDoc['teams'] = {};
    for (const [team, cycles] of this.#usage) {
      const starts = [...cycles.keys()].sort((a, b) => b - a).slice(0, KEEP_CYCLES);
      teams[team] = Object.fromEntries(starts.map((s) => [String(s), cycles.get(s) as CycleUsage]));
    }
    return { teams };
  }

  #usageOf(team: string, cycleStart: number): CycleUsage | undefined {
    return this.#usage.get(team)?.get(cycleStart);
  }

  #entry(team: string, cycleStart: number): CycleUsage {
    let cycles = this.#usage.get(team);
    if (cycles === undefined) this.#usage.set(team, (cycles = new Map()));
    let e = cycles.get(cycleStart);
    if (e === undefined) cycles.set(cycleStart, (e = { used: 0, executions: 0 }));
    return e;
  }

  async #save(): Promise<void> {
    await this.#deps.store?.put(DOC_ID, this.toJSON());
  }
}

/**
 * The ledger of the settings' plans and billing cycle, persisted under `dir` and loaded. `flush`
 * waits for its writes (at shutdown).
 */
export async function openCreditLedger(settings: ServiceSettings, clock: Clock, dir: string): Promise<{ ledger: CreditLedger; flush(): Promise<void> }> {
  const store = new JsonStore<LedgerDoc>(dir);
  await store.init();
  const ledger = new CreditLedger({
    clock,
    cycle: daysCycle(settings.limits.billing_cycle_days),
    limitOf: (team) => settings.teams.find((t) => t.name === team)?.plan.credits_per_cycle ?? 0,
    store,
  });
  await ledger.load();
  return { ledger, flush: () => store.flush() };
}
