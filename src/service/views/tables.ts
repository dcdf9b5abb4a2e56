import type { ServiceTables } from '../engine/types.ts';
import { KeyedMutex } from './keyedMutex.ts';

/**
 * The tables behind materialized views, `service.<team>.result_<x>`: the engine's ServiceTables
 * (each write an atomic swap), with the writes to one table taken one at a time, so two refreshes
 * of a view, or a refresh and a rename, never interleave.
 */
export class ViewTables {
  readonly #tables: ServiceTables;
  readonly #lock = new KeyedMutex();

  constructor(tables: ServiceTables) {
    this.#tables = tables;
  }

  /** Replaces the table with the stored result `resultId` (its column names given in order). */
  async replaceFromResult(team: string, name: string, resultId: string, columnNames: readonly string[]): Promise<void> {
    await this.#lock.run(`${team}.${name}`, () => this.#tables.replaceFromResult(team, name, resultId, columnNames));
  }

  async rename(team: string, from: string, to: string): Promise<void> {
    await this.#lock.run(`${team}.${from}`, () => this.#tables.rename(team, from, to));
  }

  async drop(team: string, name: string): Promise<void> {
    await this.#lock.run(`${team}.${name}`, () => this.#tables.drop(team, name));
  }

  async exists(team: string, name: string): Promise<boolean> {
    return this.#tables.exists(team, name);
  }
}
