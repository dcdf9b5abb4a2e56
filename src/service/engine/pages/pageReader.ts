// Pages built per request (filtered, sorted, some columns, or of a result not encoded yet) by a
// page query on the files instance. Each page query holds a slot of the page gate
// (memory/pageSlots.ts) while it runs, and preempts a background encoding (encoding/encodings.ts).
//
// Wide rows: a page query holds the page's rows in memory while it renders them (JSON text of a
// string takes several times the string), so a page of wide values may not fit the files
// instance's part of the memory however long one waits. Such a page is served with fewer rows
// (halved down to one; the page's next_uri continues after them), and a single row that still
// does not fit is read alone with more memory (memory/wideRead.ts).
import type { DuckDBConnection } from '@duckdb/node-api';
import { EngineError, type ArrowPage, type CsvPage, type Page, type PageRequest } from '../types.ts';
import { toEngineError } from '../duckdbError.ts';
import { buildArrowPage } from './arrowPage.ts';
import { planPage, rowBytesSql, type PagePlan } from './pageQuery.ts';
import { wideRowPage } from './wideRow.ts';
import type { Connections } from '../connections.ts';
import type { Gate } from '../memory/gate.ts';
import { WideRead } from '../memory/wideRead.ts';
import type { OpenResult } from '../results/resultFiles.ts';

export interface PageReaderOptions {
  connections: Connections;
  /** Page queries running at once on the files instance. */
  slots: Gate<number>;
  /** The stored result attached for paging, held until `release()`. */
  acquire(id: string): Promise<{ open: OpenResult; release: () => void }>;
  /** Called as a page query starts and ends (background encodings wait for quiet, and stop for a reader). */
  onPageQuery(phase: 'start' | 'end'): void;
  /** A row that does not fit the files instance's memory is read alone, with more (memory/wideRead.ts). */
  wide: WideRead;
}

/** `wide`: the page is one row read alone with more memory (the last resort). */
type PageQuery<T> = (conn: DuckDBConnection, open: OpenResult, req: PageRequest, wide: boolean) => Promise<T>;

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
    return this.#withPageQuery(id, req, async (conn, open, r) => {
      const plan = planPage(open.columns, r, 'json');
      const body = await buildArrowPage(conn, open.columns, plan);
      const bytesSql = `SELECT coalesce(sum(${rowBytesSql(plan.cols, open.columns)}), 0)::BIGINT FROM ${plan.source} AS page`;
      const bytes = plan.headerBytes + Number((await conn.runAndReadAll(bytesSql)).getRowsJson()[0]![0]);
      const total = await totalRows(conn, plan);
      return { arrow: body.bytes, rowCount: body.rowCount, bytes, totalRowCount: total, columnNames: plan.columnNames, columnTypes: plan.columnTypes };
    });
  }

  #run(id: string, req: PageRequest, format: 'json' | 'csv'): Promise<RanPage> {
    return this.#withPageQuery(id, req, async (conn, open, r, wide) => {
      const plan = planPage(open.columns, r, format);
      if (wide) {
        // One row: rendered by DuckDB if it can, else made here from its stored values.
        const made = await conn.runAndReadAll(plan.sql).then(
          (rows) => rows.getRowsJson()[0]!,
          async (err: unknown) => {
            if (!WideRead.isMemoryShort(err)) throw err;
            const w = await wideRowPage(conn, open.columns, plan, format);
            return [w.rowCount, w.body, w.bytes];
          },
        );
        return { plan, rowCount: Number(made[0]), body: String(made[1]), bytes: Number(made[2]), total: await totalRows(conn, plan) };
      }
      const row = (await conn.runAndReadAll(plan.sql)).getRowsJson()[0]!;
      const total = await totalRows(conn, plan);
      return { plan, rowCount: Number(row[0]), body: String(row[1]), bytes: Number(row[2]), total };
    });
  }

  /** The page, with fewer rows when they do not fit (see the header). */
  async #withPageQuery<T>(id: string, req: PageRequest, fn: PageQuery<T>): Promise<T> {
    let limit = req.limit;
    for (;;) {
      try {
        return await this.#attempt(id, { ...req, limit }, fn, false);
      } catch (err) {
        // A sample is one page of its own size: it is not cut.
        if (!WideRead.isMemoryShort(err) || req.sampleCount !== undefined) throw err;
        if (limit <= 1) return this.#attempt(id, { ...req, limit }, fn, true);
        // Halved from the rows the page can hold at most (a page of 32,000 asked of 3 rows left is 3 rows).
        limit = Math.max(1, Math.floor(Math.min(limit, await this.#rowsFrom(id, req.offset)) / 2));
      }
    }
  }

  /** Rows of the stored result from `offset` on (at least one). */
  async #rowsFrom(id: string, offset: number): Promise<number> {
    const { open, release } = await this.#o.acquire(id);
    release();
    return Math.max(1, open.info.rowCount - offset);
  }

  /** Runs a page query on a connection of the files instance while holding a page slot (`wide`: the whole gate, and more memory). */
  async #attempt<T>(id: string, req: PageRequest, fn: PageQuery<T>, wide: boolean): Promise<T> {
    const { open, release } = await this.#o.acquire(id);
    try {
      // A wide read takes the page gate whole itself (memory/wideRead.ts), not a slot of it.
      const { conn, end } = await this.#connect(wide ? 0 : 1);
      try {
        if (!wide) return await fn(conn, open, req, false);
        return await this.#o.wide.run(conn, () => fn(conn, open, req, true));
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
  async #connect(slots: number): Promise<{ conn: DuckDBConnection; end: () => void }> {
    this.#o.onPageQuery('start');
    const leave = slots === 0 ? () => undefined : await this.#o.slots.enter(slots);
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
