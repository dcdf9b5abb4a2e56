// Every connection of the engine's two instances is opened and closed here, so that close()
// knows each one with a native call in flight: closing an instance (or ending the thread) under
// one aborts the process. Connections of user SQL, page queries and encodings are interrupted by
// close; those of the engine's own statements (`withTrusted`) are interrupted too and waited for.
// Each is opened through its instance's InstanceUse (memory/memoryTrim.ts), which holds a new one
// back while an idle trim dips the memory limit.
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { EngineError } from './types.ts';
import type { InstanceUse } from './memory/memoryTrim.ts';

/** How often a stopped connection is interrupted again: DuckDB forgets an interrupt between two statements. */
export const INTERRUPT_REPEAT_MS = 5;

/** `users`: the instance that runs users' SQL; `files`: the one that opens the results directory. */
export type InstanceName = 'users' | 'files';

/** The instances of the teams' SQL, one per team, when the engine walls teams apart (teams/teamInstances.ts). */
export interface TeamUses {
  /** The team's instance, opened on first use. */
  use(team: string): Promise<InstanceUse>;
  /** Every team instance opened so far. */
  opened(): InstanceUse[];
  /** The teams whose instance is open. */
  openedTeams(): string[];
}

export class Connections {
  readonly #uses: Record<InstanceName, InstanceUse>;
  readonly #teams: TeamUses | undefined;
  readonly #running = new Set<DuckDBConnection>();
  readonly #trusted = new Set<DuckDBConnection>();
  readonly #useOf = new Map<DuckDBConnection, InstanceUse>();
  #starting = 0;
  #closed = false;

  constructor(users: InstanceUse, files: InstanceUse, teams?: TeamUses) {
    this.#uses = { users, files };
    this.#teams = teams;
  }

  /** Whether each team's SQL runs on an instance of its own. */
  get walled(): boolean {
    return this.#teams !== undefined;
  }

  get closed(): boolean {
    return this.#closed;
  }

  use(name: InstanceName): InstanceUse {
    return this.#uses[name];
  }

  /** The instance a connection of this engine belongs to (a team's own, when teams are walled apart). */
  useOf(conn: DuckDBConnection): InstanceUse | undefined {
    return this.#useOf.get(conn);
  }

  checkOpen(): void {
    if (this.#closed) throw new EngineError('internal', 'engine is closed');
  }

  /** A connection interrupted by close (user SQL, page queries, encodings); end it with `end`. */
  async open(name: InstanceName, team?: string): Promise<DuckDBConnection> {
    const conn = await this.#connect(name, team);
    this.#running.add(conn);
    return conn;
  }

  end(conn: DuckDBConnection): void {
    this.#running.delete(conn);
    this.#disconnect(conn);
  }

  /** A connection for the engine's own statements (close interrupts it and waits for it). */
  async withTrusted<T>(fn: (conn: DuckDBConnection) => Promise<T>, name: InstanceName = 'users', team?: string): Promise<T> {
    this.checkOpen();
    const conn = await this.#connect(name, team);
    this.#trusted.add(conn);
    try {
      return await fn(conn);
    } finally {
      this.#trusted.delete(conn);
      this.#disconnect(conn);
    }
  }

  /**
   * Counted while connecting: close() must not close an instance under a connect in progress.
   * With teams walled apart, the users' SQL of a team (name 'users', a team given) runs on the
   * team's own instance.
   */
  async #connect(name: InstanceName, team?: string): Promise<DuckDBConnection> {
    this.#starting += 1;
    try {
      const use = name === 'users' && team !== undefined && this.#teams !== undefined ? await this.#teams.use(team) : this.#uses[name];
      const conn = await use.connect();
      this.#useOf.set(conn, use);
      return conn;
    } finally {
      this.#starting -= 1;
    }
  }

  #disconnect(conn: DuckDBConnection): void {
    const use = this.#useOf.get(conn);
    this.#useOf.delete(conn);
    if (use === undefined) conn.closeSync();
    else use.close(conn);
  }

  /** Marks the engine closed; stops trims. */
  markClosed(): void {
    this.#closed = true;
  }

  /**
   * Waits until no connection has a native call in flight, interrupting every statement again
   * and again (an interrupt between two statements is lost), then closes both instances.
   */
  async close(beforeClosing: () => Promise<void>): Promise<void> {
    this.#closed = true;
    await Promise.all([this.#uses.users.stop(), this.#uses.files.stop(), ...(this.#teams?.opened() ?? []).map((u) => u.stop())]);
    while (this.#starting > 0 || this.#running.size > 0 || this.#trusted.size > 0) {
      for (const conn of this.#running) conn.interrupt();
      for (const conn of this.#trusted) conn.interrupt();
      await new Promise((r) => setTimeout(r, INTERRUPT_REPEAT_MS));
    }
    await beforeClosing();
    const files: DuckDBInstance = this.#uses.files.instance;
    files.closeSync();
    for (const team of this.#teams?.opened() ?? []) team.instance.closeSync();
    this.#uses.users.instance.closeSync();
  }
}
