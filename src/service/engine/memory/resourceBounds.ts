// Memory and temporary-disk bounds of executions, from their tiers. DuckDB 1.5 bounds memory
// (`memory_limit`) and spilled data (`max_temp_directory_size`) per instance only: no setting is
// per connection or per query (duckdb_settings() lists none), and its memory accounting is not
// by query. So the engine sets the instance's limits to the sum of the bounds of the executions
// running, plus a reserve for the service's own work (page queries, encodings, view copies),
// never above the limits the instance was opened with, and back to those when none runs. The
// lockdown lets only these two settings change (`allowed_configs`); the sandbox refuses SET.
//
// What that gives: an execution running alone fails (FAILED, capacity, cost 0) once it needs
// more than its tier allows; executions running together are bounded together by the sum of
// their tiers (a team's share by its max_inflight executions), so a runaway query fails cleanly
// instead of taking the machine; it can still take headroom its neighbours were not using.
//
// Fairness between executions running at once ('share', the default) is not given: DuckDB's pool
// cannot say whose query holds what, so when the sum of their needs passes the ceiling, the one
// whose allocation comes next fails, not necessarily the one using most. 'reserve' gives it at a
// price: an execution starts only when its tier's bound (at most the ceiling) fits beside the
// bounds of those running, and waits its turn otherwise (first come, first served; the wait
// counts toward its timeout; cancel ends it). Each running execution can then use its whole bound
// whatever the others do, and fails only past it; but executions run at once only as many as
// their bounds fit in the engine (with tiers larger than the engine, one at a time), however
// little they really use. Meant for engines sized in multiples of the tiers.
import { EngineError, type TrimOptions } from '../types.ts';
import { Gate } from './gate.ts';

/** What an execution may use (its tier's bounds). */
export interface ExecutionBounds {
  memoryBytes: number;
  tempBytes: number;
  tier: string;
}

/** Engine memory kept for the service's own statements while executions run. */
export const SERVICE_RESERVE_BYTES = 64 * 1024 * 1024;

const UNITS: Record<string, number> = {
  b: 1, bytes: 1, kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3, tib: 1024 ** 4,
};

/** DuckDB's text of a size ('18.8 GiB', '95.3 MiB'); undefined when it is not one ('90% of available disk space'). */
export function parseDuckDbSize(text: string): number | undefined {
  const m = /^\s*([0-9.]+)\s*([A-Za-z]+)\s*$/.exec(text);
  const unit = m ? UNITS[m[2]!.toLowerCase()] : undefined;
  return m && unit !== undefined ? Math.floor(Number(m[1]) * unit) : undefined;
}

export function formatBytes(n: number): string {
  if (n >= 1024 ** 3 && n % 1024 ** 3 === 0) return `${n / 1024 ** 3} GiB`;
  if (n >= 1024 ** 2 && n % 1024 ** 2 === 0) return `${n / 1024 ** 2} MiB`;
  return `${n} bytes`;
}

/** The instance's limits when it was opened: DuckDB's texts, restored when no execution runs. */
export interface EngineCeilings {
  memoryLimit: string;
  maxTempDirectorySize: string;
  /** 'reserve': an execution waits until its bounds fit beside the running ones' (see the header). */
  admission?: MemoryAdmission;
  /** The files instance's memory_limit (a part of the engine's; index.ts), restored after a trim. */
  filesMemoryLimit?: string;
  /** When idle memory is given back (memoryTrim.ts). */
  trim?: TrimOptions;
  /** Larger results (result_set_bytes, rows) are encoded when idle, not at completion (engine.ts). */
  encodeAtCompletionMax?: { bytes?: number; rows?: number };
}

export type MemoryAdmission = 'share' | 'reserve';

/** One execution held by the gate: its bounds, when it has them (an engine without ceilings, a caller without a tier). */
interface Held {
  bounds?: ExecutionBounds;
  /** The instance it runs on, when each team has its own (lowercased team; see `perInstance`). */
  instance?: string;
}

/**
 * With an instance per team (teams/teamInstances.ts): each team instance's limits are the sum of
 * the bounds of the executions running on it (plus the reserve), its ceilings when none runs.
 * `set(sql, team)` runs a SET on that team's instance; `opened()` names the team instances open.
 */
export interface PerInstance {
  set(sql: string, team: string): Promise<void>;
  opened(): string[];
}

/**
 * Executions running, and the instance's limits set to them. Every execution enters (with its
 * bounds or without): under 'reserve' it waits in the engine's one gate (gate.ts) until its bounds
 * fit; encodings wait in the same gate for no execution to run (`idle`).
 */
export class ResourceBounds {
  readonly #set: (sql: string) => Promise<void>;
  readonly #ceilings: EngineCeilings | undefined;
  readonly #memoryCeiling: number;
  readonly #tempCeiling: number;
  readonly #gate: Gate<Held>;
  readonly #perInstance: PerInstance | undefined;
  /** SETs are applied one after the other, each with the set of executions at that moment. */
  #applying: Promise<void> = Promise.resolve();
  /** Per instance ('' the users' instance, else the team's): the limits last applied, and the memory_limit in force. */
  readonly #applied = new Map<string, string>();
  readonly #memoryInForce = new Map<string, string>();

  constructor(ceilings: EngineCeilings | undefined, set: (sql: string) => Promise<void>, perInstance?: PerInstance) {
    this.#ceilings = ceilings;
    this.#set = set;
    this.#perInstance = perInstance;
    this.#memoryCeiling = (ceilings && parseDuckDbSize(ceilings.memoryLimit)) ?? Number.POSITIVE_INFINITY;
    this.#tempCeiling = (ceilings && parseDuckDbSize(ceilings.maxTempDirectorySize)) ?? Number.POSITIVE_INFINITY;
    const reserve = ceilings?.admission === 'reserve';
    this.#gate = new Gate<Held>((need, held) => !reserve || this.#fits(need, held));
  }

  /** The instance's memory_limit as last set (a trim restores it: memoryTrim.ts); undefined without ceilings. */
  get memoryLimit(): string | undefined {
    return this.memoryLimitOf(undefined);
  }

  /** The same for a team's own instance (before any is set: the limits of what runs on it). */
  memoryLimitOf(team: string | undefined): string | undefined {
    if (this.#ceilings === undefined) return undefined;
    const key = team?.toLowerCase() ?? '';
    return this.#memoryInForce.get(key) ?? this.#limitsOf(key).memory;
  }

  /** Executions waiting for room to start ('reserve'). */
  get waiting(): number {
    return this.#gate.waiting;
  }

  /** Executions running now. */
  get running(): number {
    return this.#gate.held.length;
  }

  /** Resolves when no execution runs (an encoding waits for that); `wakeAll` ends the wait. */
  idle(): Promise<void> {
    return this.#gate.whenEmpty();
  }

  wakeAll(): void {
    this.#gate.wakeAll();
  }

  /**
   * Counts the execution in until the returned function is called (once it has stopped). Under
   * 'reserve' it first waits for room; `signal` ends the wait (rejecting with its reason).
   */
  async enter(bounds: ExecutionBounds | undefined, signal?: AbortSignal, team?: string): Promise<() => Promise<void>> {
    const own: Held = bounds === undefined ? {} : { bounds: { ...bounds } };
    if (this.#perInstance !== undefined && team !== undefined) own.instance = team.toLowerCase();
    const leave = await this.#gate.enter(own, signal);
    if (own.bounds !== undefined) await this.#apply();
    return async () => {
      leave();
      if (own.bounds !== undefined) await this.#apply();
    };
  }

  /** A bound as reserved: never more than the engine has, so every execution can start at last. */
  #reserved(b: ExecutionBounds): { memory: number; temp: number } {
    return { memory: Math.min(b.memoryBytes, this.#memoryCeiling - SERVICE_RESERVE_BYTES), temp: Math.min(b.tempBytes, this.#tempCeiling) };
  }

  #fits(need: Held, held: readonly Held[]): boolean {
    let memory = SERVICE_RESERVE_BYTES;
    let temp = 0;
    for (const r of [...held, need]) {
      if (r.bounds === undefined) continue;
      const x = this.#reserved(r.bounds);
      memory += x.memory;
      temp += x.temp;
    }
    return memory <= this.#memoryCeiling && temp <= this.#tempCeiling;
  }

  /** The limits of an instance ('' the users' one) for the executions running on it. */
  #limitsOf(key: string): { memory: string; temp: string } {
    const ceilings = this.#ceilings!;
    const running = this.#gate.held.flatMap((h) => (h.bounds === undefined || (h.instance ?? '') !== key ? [] : [h.bounds]));
    if (running.length === 0) return { memory: ceilings.memoryLimit, temp: ceilings.maxTempDirectorySize };
    let m = SERVICE_RESERVE_BYTES;
    let t = 0;
    for (const b of running) {
      m += b.memoryBytes;
      t += b.tempBytes;
    }
    return { memory: `${Math.min(m, this.#memoryCeiling)}B`, temp: `${Math.min(t, this.#tempCeiling)}B` };
  }

  #apply(): Promise<void> {
    if (this.#ceilings === undefined) return Promise.resolve();
    const next = this.#applying.then(async () => {
      const per = this.#perInstance;
      if (per === undefined) return this.#applyTo('', (sql) => this.#set(sql));
      for (const team of per.opened()) await this.#applyTo(team.toLowerCase(), (sql) => per.set(sql, team));
    });
    this.#applying = next.catch(() => undefined);
    return next;
  }

  async #applyTo(key: string, set: (sql: string) => Promise<void>): Promise<void> {
    const { memory, temp } = this.#limitsOf(key);
    const running = this.#gate.held.some((h) => h.bounds !== undefined && (h.instance ?? '') === key);
    const applied = `${memory}|${temp}`;
    if (applied === this.#applied.get(key)) return;
    this.#applied.set(key, applied);
    // DuckDB refuses a memory limit below what is in use and cannot free: the previous one
    // stays until the next change (the executions in use finish and it is applied again).
    await set(`SET GLOBAL memory_limit = '${memory}'`).then(
      () => void this.#memoryInForce.set(key, memory),
      () => void this.#applied.delete(key),
    );
    await set(`SET GLOBAL max_temp_directory_size = '${temp}'`).catch(async () => {
      if (!running) await set('RESET GLOBAL max_temp_directory_size').catch(() => undefined);
      else this.#applied.delete(key);
    });
  }
}

/**
 * DuckDB's out-of-memory error (memory or spilled data) of an execution, told in the terms of
 * its tier: its own "SET memory_limit" advice does not apply to a user of the service.
 */
export function boundsError(err: EngineError, bounds: ExecutionBounds | undefined): EngineError {
  if (err.kind !== 'capacity' || bounds === undefined || !/out of memory|failed to (allocate|offload)/i.test(err.message)) return err;
  const duck = err.message.split('\n')[0]!.trim().replace(/\.$/, '');
  const together = "(executions running at once share the sum of their tiers' bounds)";
  const message = /max_temp_directory_size|offload/i.test(err.message)
    ? `Query exceeded the temporary disk of its tier: a ${bounds.tier} execution may spill ${formatBytes(bounds.tempBytes)} of data to disk ${together}. ${duck}. Make it need less (filter or aggregate before sorting, joining or DISTINCT; fewer columns) or run it in a larger tier.`
    : `Query exceeded the memory of its tier: a ${bounds.tier} execution may use ${formatBytes(bounds.memoryBytes)} of engine memory ${together}. ${duck}. Make it need less (filter or aggregate earlier; fewer columns; no list() of every row) or run it in a larger tier.`;
  return new EngineError('capacity', message, { cause: err });
}
