// Another team's public objects (materialized views and uploads that are not private), read by
// name through a team's own instance (teamInstances.ts), which cannot open the owner's file.
//
// When an execution of team B names `service.a.v` and the service lets B read it (canRead), the
// engine copies the table, through A's instance, into a new snapshot file in `public/` (an
// immutable DuckDB file: the copy keeps every type, the 256-bit unions and enums included),
// attaches that file read-only to B's instance under a catalog of its own, deletes the file (the
// open handle keeps it readable to B's instance, and to nothing else: no path names it any more),
// and makes `service.a.v` in B's file a view over it. The snapshot is used until A's tables
// change: every write of A's tables (a refresh, an upload, A's SQL that writes its schema) moves
// A's epoch on, and B's next execution naming the object copies it again.
//
// Before each of B's executions runs, every snapshot B's instance holds is checked against the
// service's rights: one whose object is no longer readable to B (made private, deleted) has its
// view dropped and its catalog detached, so B's SQL, even past the sandbox's lists, finds
// nothing of it. Making it public again makes the next execution naming it copy it anew.
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { sqlIdent, sqlString } from '../../sql.ts';
import { KeyedMutex } from '../../views/keyedMutex.ts';

/** Runs trusted code on a connection of a team's instance. */
export type WithTeam = <T>(team: string, fn: (conn: DuckDBConnection) => Promise<T>) => Promise<T>;

/** A view in the reader's file over a snapshot attached to its instance. */
interface Pointer {
  owner: string;
  name: string;
  catalog: string;
  epoch: number;
}

export class SharedObjects {
  readonly #withTeam: WithTeam;
  readonly #publicDir: string;
  /** Moves on at every change of a team's tables (owner, lowercased). */
  readonly #epochs = new Map<string, number>();
  /** Per reader (lowercased): `owner.name` -> its pointer. */
  readonly #pointers = new Map<string, Map<string, Pointer>>();
  readonly #readers = new KeyedMutex();

  constructor(withTeam: WithTeam, publicDir: string) {
    this.#withTeam = withTeam;
    this.#publicDir = publicDir;
  }

  /** The team's tables changed: snapshots of them are stale. */
  changed(owner: string): void {
    const key = owner.toLowerCase();
    this.#epochs.set(key, (this.#epochs.get(key) ?? 0) + 1);
  }

  /**
   * Before an execution of `reader` runs: drops what it may no longer read, and makes each
   * readable object it names (`owner`, `name`) current in its file.
   */
  prepare(reader: string, canRead: (owner: string, name: string) => boolean, named: ReadonlyArray<readonly [string, string]>): Promise<void> {
    const key = reader.toLowerCase();
    return this.#readers.run(key, async () => {
      const pointers = this.#pointers.get(key) ?? new Map<string, Pointer>();
      this.#pointers.set(key, pointers);
      for (const [id, p] of [...pointers]) {
        if (canRead(p.owner, p.name)) continue;
        await this.#withTeam(reader, (conn) => dropPointer(conn, p));
        pointers.delete(id);
      }
      for (const [owner, name] of named) {
        if (owner === key || !canRead(owner, name)) continue;
        const id = `${owner}.${name}`;
        const epoch = this.#epochs.get(owner) ?? 0;
        const old = pointers.get(id);
        if (old?.epoch === epoch) continue;
        const next = await this.#copy(reader, owner, name, epoch);
        if (old !== undefined) await this.#withTeam(reader, (conn) => (next === undefined ? dropPointer(conn, old) : detach(conn, old.catalog)));
        if (next === undefined) pointers.delete(id);
        else pointers.set(id, next);
      }
    });
  }

  /** A snapshot of `service.<owner>.<name>` attached to the reader's instance, its view made; undefined when it is no table. */
  async #copy(reader: string, owner: string, name: string, epoch: number): Promise<Pointer | undefined> {
    const hex = randomBytes(8).toString('hex');
    const file = join(this.#publicDir, `${hex}.duckdb`);
    const catalog = `shared_${hex}`;
    try {
      const copied = await this.#withTeam(owner, (conn) => writeSnapshot(conn, file, `w_${hex}`, owner, name));
      if (!copied) return undefined;
      await this.#withTeam(reader, async (conn) => {
        await conn.run(`ATTACH ${sqlString(file)} AS ${sqlIdent(catalog)} (READ_ONLY)`);
        await rm(file, { force: true });
        await rm(`${file}.wal`, { force: true });
        await conn.run(`CREATE SCHEMA IF NOT EXISTS service.${sqlIdent(owner)}`);
        await conn.run(`CREATE OR REPLACE VIEW service.${sqlIdent(owner)}.${sqlIdent(name)} AS SELECT * FROM ${sqlIdent(catalog)}.${sqlIdent(owner)}.${sqlIdent(name)}`);
      });
    } finally {
      await rm(file, { force: true });
      await rm(`${file}.wal`, { force: true });
    }
    return { owner, name, catalog, epoch };
  }
}

/** Copies the owner's table (a base table only: a view would run the owner's SQL unchecked) into a new file. */
async function writeSnapshot(conn: DuckDBConnection, file: string, alias: string, owner: string, name: string): Promise<boolean> {
  const found = await conn.runAndReadAll(
    `SELECT count(*) FROM duckdb_tables() WHERE database_name = 'service' AND lower(schema_name) = ${sqlString(owner)} AND lower(table_name) = ${sqlString(name)}`,
  );
  if (Number(found.getRowsJson()[0]?.[0]) === 0) return false;
  await conn.run(`ATTACH ${sqlString(file)} AS ${sqlIdent(alias)} (READ_WRITE)`);
  try {
    await conn.run(`CREATE SCHEMA ${sqlIdent(alias)}.${sqlIdent(owner)}`);
    await conn.run(`CREATE TABLE ${sqlIdent(alias)}.${sqlIdent(owner)}.${sqlIdent(name)} AS SELECT * FROM service.${sqlIdent(owner)}.${sqlIdent(name)}`);
  } finally {
    await conn.run(`DETACH ${sqlIdent(alias)}`);
  }
  return true;
}

async function dropPointer(conn: DuckDBConnection, p: Pointer): Promise<void> {
  await conn.run(`DROP VIEW IF EXISTS service.${sqlIdent(p.owner)}.${sqlIdent(p.name)}`);
  await detach(conn, p.catalog);
}

async function detach(conn: DuckDBConnection, catalog: string): Promise<void> {
  await conn.run(`DETACH DATABASE IF EXISTS ${sqlIdent(catalog)}`);
}
