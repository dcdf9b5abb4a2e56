// Pages built per request (filtered, sorted, some columns, or of a result not encoded yet) by a
// page query on the files instance. Each page query holds a slot of the page gate
// (memory/pageSlots.ts) while it runs, and preempts a background encoding (encoding/encodings.ts).
import type { DuckDBConnection } from '@duckdb/node-api';
import { EngineError, type ArrowPage, type CsvPage, type Page, type PageRequest } from '../types.ts';
import { toEngineError } from '../duckdbError.ts';
import { buildArrowPage } from './arrowPage.ts';
import { planPage, rowBytesSql, type PagePlan } from './pageQuery.ts';
import type { Connections } from '../connections.ts';
import type { Gate } from '../memory/gate.ts';
import type { OpenResult } from '../results/resultFiles.ts';

export interface PageReaderOptions {
  connections: Connections;
  /** Page queries running at once on the files instance. */
  slots: Gate<number>;
  /** The stored result attached for paging, held until `release()`. */
  acquire(id: string): Promise<{ open: OpenResult; release: () => void }>;
  /** Called as a page query starts and ends (background encodings wait for quiet, and stop for a reader). */
  onPageQuery(phase: 'start' | 'end'): void;
}

interface RanPage {
  plan: PagePlan;
  rowCount: number;
  body: string;
  bytes: number;
  total: number;
}

export class PageReader {
  readonly #o: PageReaderOptions;

  constructor(options: PageReaderOptions) {
    this.#o = options;
  }

  async page(id: string, req: PageRequest): Promise<Page> {
    const r = await this.#run(id, req, 'json');
    return {
      rowsJson: `[${r.body}]`,
      rowCount: r.rowCount,
      bytes: r.plan.headerBytes + r.bytes,
      totalRowCount: r.total,
      columnNames: r.plan.columnNames,
      columnTypes: r.plan.columnTypes,
    };
  }

  async csvPage(id: string, req: PageRequest): Promise<CsvPage> {
    const r = await this.#run(id, req, 'csv');
    const header = r.plan.columnNames.map(csvHeaderField).join(',');
    return { csv: `${header}\n${r.body}${r.rowCount > 0 ? '\n' : ''}`, rowCount: r.rowCount, totalRowCount: r.total };
  }

  async arrowPage(id: string, req: PageRequest): Promise<ArrowPage> {
    return this.#withPageQuery(id, req, async (conn, open) => {
      const plan = planPage(open.columns, req, 'json');
      const body = await buildArrowPage(conn, open.columns, plan);
      const bytesSql = `SELECT coalesce(sum(${rowBytesSql(plan.cols, open.columns)}), 0)::BIGINT FROM ${plan.source} AS page`;
      const bytes = plan.headerBytes + Number((await conn.runAndReadAll(bytesSql)).getRowsJson()[0]![0]);
      const total = await totalRows(conn, plan);
      return { arrow: body.bytes, rowCount: body.rowCount, bytes, totalRowCount: total, columnNames: plan.columnNames, columnTypes: plan.columnTypes };
    });
  }

  #run(id: string, req: PageRequest, format: 'json' | 'csv'): Promise<RanPage> {
    return this.#withPageQuery(id, req, async (conn, open) => {
      const plan = planPage(open.columns, req, format);
      const row = (await conn.runAndReadAll(plan.sql)).getRowsJson()[0]!;
      const total = await totalRows(conn, plan);
      return { plan, rowCount: Number(row[0]), body: String(row[1]), bytes: Number(row[2]), total };
    });
  }

  /** Runs a page query on a connection of the files instance while holding a page slot. */
  async #withPageQuery<T>(id: string, req: PageRequest, fn: (conn: DuckDBConnection, open: OpenResult) => Promise<T>): Promise<T> {
    const { open, release } = await this.#o.acquire(id);
    try {
      const { conn, end } = await this.#connect();
      try {
        return await fn(conn, open);
      } catch (err) {
        throw asFilterError(err, req);
      } finally {
        end();
      }
    } finally {
      release();
    }
  }

  /** A connection for a page query: interrupted by close, which waits for it. */
  async #connect(): Promise<{ conn: DuckDBConnection; end: () => void }> {
    this.#o.onPageQuery('start');
    const leave = await this.#o.slots.enter(1);
    let conn: DuckDBConnection;
    try {
      conn = await this.#o.connections.open('files');
    } catch (err) {
      leave();
      throw err;
    }
    const end = (): void => {
      this.#o.onPageQuery('end');
      this.#o.connections.end(conn);
      leave();
    };
    if (this.#o.connections.closed) {
      end();
      throw new EngineError('canceled', 'the service is stopping');
    }
    return { conn, end };
  }
}

async function totalRows(conn: DuckDBConnection, plan: PagePlan): Promise<number> {
  if (plan.countSql === undefined) return plan.totalRowCount ?? 0;
  return Number((await conn.runAndReadAll(plan.countSql)).getRowsJson()[0]![0]);
}

/** A filter comparing a column with a value of the wrong type is the caller's mistake. */
function asFilterError(err: unknown, req: PageRequest): EngineError {
  const mapped = toEngineError(err);
  // Planning the page already names a filter it cannot read: that error is said once, as it is.
  if (mapped.kind === 'bad_request') return mapped;
  if ((req.filters || req.sortBy) && mapped.kind !== 'capacity' && mapped.kind !== 'unrepresentable') {
    return new EngineError('bad_request', `filters: ${mapped.message}`, { cause: err });
  }
  return mapped;
}

function csvHeaderField(name: string): string {
  return /[",\r\n]/.test(name) || name === '' ? `"${name.replaceAll('"', '""')}"` : name;
}
