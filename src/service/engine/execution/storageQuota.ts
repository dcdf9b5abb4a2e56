// The storage quota of SQL that writes a team's schema: its statements run in one transaction
// (DuckDB lets one transaction write the temporary catalog and one attached database, here
// `service`), the team's tables are measured inside it (their uncommitted rows included), and
// the transaction is committed only when tables + views + uploads stay within the quota. Over
// the quota it is rolled back: nothing the SQL wrote to the team's schema is kept, and the
// execution fails with EngineError 'capacity' (cost 0, as protocol.md's capacity failures).
//
// A statement that writes more than the quota could ever allow is not left to run to its end:
// DuckDB writes a large uncommitted table into the database file as it goes (and a rollback
// leaves the file that large, its blocks free for reuse), so while the transaction is open the
// file is watched, and once it has grown by more than GROWTH_FACTOR times the room left (plus
// GROWTH_SLACK_BYTES) the statement is interrupted and fails with the same quota error.
import { stat } from 'node:fs/promises';
import type { DuckDBConnection } from '@duckdb/node-api';
import { teamTableBytes } from '../tables/teamStorage.ts';
import { EngineError } from '../types.ts';

/** The database file may grow by this many times the room the quota leaves (DuckDB's blocks hold rows more compactly than CSV text, but not always)... */
const GROWTH_FACTOR = 4;
/** ... plus this much (block and metadata granularity, and other teams writing at the same time). */
const GROWTH_SLACK_BYTES = 64 * 1024 * 1024;
const WATCH_MS = 100;

async function fileBytes(path: string): Promise<number> {
  const size = async (p: string): Promise<number> => (await stat(p).catch(() => undefined))?.size ?? 0;
  return (await size(path)) + (await size(`${path}.wal`));
}

export class StorageQuota {
  readonly #conn: DuckDBConnection;
  readonly #team: string;
  readonly #limit: { limitBytes: number; otherBytes: number };
  #open = true;
  #watch: NodeJS.Timeout | undefined;
  #grewBy: number | undefined;

  private constructor(conn: DuckDBConnection, team: string, limit: { limitBytes: number; otherBytes: number }) {
    this.#conn = conn;
    this.#team = team;
    this.#limit = limit;
  }

  /**
   * Opens the transaction. `databaseFile` (the file of the `service` catalog) is watched while it
   * is open: see the header.
   */
  static async begin(conn: DuckDBConnection, team: string, limit: { limitBytes: number; otherBytes: number }, databaseFile?: string): Promise<StorageQuota> {
    await conn.run('BEGIN TRANSACTION');
    const quota = new StorageQuota(conn, team, limit);
    if (databaseFile !== undefined) await quota.#startWatch(databaseFile);
    return quota;
  }

  async #startWatch(file: string): Promise<void> {
    const start = await fileBytes(file);
    const room = Math.max(0, this.#limit.limitBytes - this.#limit.otherBytes);
    const most = room * GROWTH_FACTOR + GROWTH_SLACK_BYTES;
    let busy = false;
    this.#watch = setInterval(() => {
      if (busy) return;
      busy = true;
      void fileBytes(file)
        .then((now) => {
          if (this.#grewBy === undefined && now - start > most) this.#grewBy = now - start;
          // Repeated: an interrupt between two statements is lost (engine.ts).
          if (this.#grewBy !== undefined && this.#open) this.#conn.interrupt();
        })
        .finally(() => {
          busy = false;
        });
    }, WATCH_MS);
  }

  #stopWatch(): void {
    if (this.#watch !== undefined) clearInterval(this.#watch);
    this.#watch = undefined;
  }

  /** The quota error when the watch interrupted the SQL (the interrupt is then not a cancel). */
  overflowError(): EngineError | undefined {
    if (this.#grewBy === undefined) return undefined;
    const { limitBytes, otherBytes } = this.#limit;
    return new EngineError(
      'capacity',
      `Storage quota exceeded: the SQL was stopped after writing ${this.#grewBy} bytes to the service's database for service.${this.#team}, more than the storage quota of ${limitBytes} bytes leaves (the team's materialized views and uploads hold ${otherBytes} bytes); nothing this execution wrote to service.${this.#team} was kept. Drop tables you no longer need (DROP TABLE service.${this.#team}.<name>) or store fewer rows.`,
    );
  }

  /**
   * Commits when the team's storage fits its quota; otherwise rolls back and throws. Returns the
   * bytes of the team's tables measured just before the commit.
   */
  async settle(): Promise<number> {
    this.#stopWatch();
    const tables = await teamTableBytes(this.#conn, this.#team);
    const { limitBytes, otherBytes } = this.#limit;
    if (tables + otherBytes > limitBytes) {
      await this.abandon();
      throw new EngineError(
        'capacity',
        `Storage quota exceeded: the tables of service.${this.#team} would hold ${tables} bytes, and with the team's materialized views and uploads (${otherBytes} bytes) that exceeds the storage quota of ${limitBytes} bytes; nothing this execution wrote to service.${this.#team} was kept. Drop tables you no longer need (DROP TABLE service.${this.#team}.<name>) or store fewer rows.`,
      );
    }
    this.#open = false;
    await this.#conn.run('COMMIT');
    return tables;
  }

  /** Rolls back what the SQL wrote (after a failure, a cancel or a timeout). */
  async abandon(): Promise<void> {
    this.#stopWatch();
    if (!this.#open) return;
    this.#open = false;
    await this.#conn.run('ROLLBACK').catch(() => undefined);
  }
}
