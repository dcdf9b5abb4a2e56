import { ARROW_STREAM_MEDIA_TYPE, arrowPageHeaders, CSV_NEXT_OFFSET_HEADER, CSV_NEXT_URI_HEADER, holdsResult, MESSAGES, PATHS } from '../../protocol/index.ts';
import { negotiate } from '../http/accept.ts';
import type { ResultMetadata } from '../../protocol/index.ts';
import type { ServiceContext } from '../context.ts';
import { EngineError, type PageRequest } from '../engine/types.ts';
import type { CompletedExecution, ExecutionRecord } from '../executionRecord.ts';
import { HttpError } from '../http/errors.ts';
import { storedFrames } from '../http/compressedFrames.ts';
import { json, jsonText, partsBody, type Reply } from '../http/reply.ts';
import { csvField } from '../engine/pages/pageQuery.ts';
import type { EncodedPage } from '../engine/encoding/encodedResult.ts';
import type { RequestContext, Route } from '../http/router.ts';
import { canonicalValue, ParameterError } from '../parameters.ts';
import { defaultPageRows, effectiveLimit, nextUri, parseResultShape, type ResultShape } from '../resultShape.ts';
import { executionFields, timingOf } from '../statusView.ts';
import { checkExecutionParams } from './executionParams.ts';
import { executionOf, queryOf } from './lookup.ts';

type Format = 'json' | 'csv' | 'arrow';

/** What the JSON results operations answer with, the default first. */
const JSON_RESULT_MEDIA = ['application/json', ARROW_STREAM_MEDIA_TYPE] as const;

/** Results of an execution, and the latest result of a saved query, as JSON or CSV pages. */
export function resultRoutes(svc: ServiceContext): Route[] {
  const byExecution = (format: 'json' | 'csv'): Route => ({
    method: 'GET',
    path: `/v1/execution/:id/results${format === 'csv' ? '/csv' : ''}`,
    scope: 'Read',
    async handle(ctx) {
      const wanted = mediaFormat(ctx, format);
      if (typeof wanted !== 'string') return wanted;
      const shape = parseResultShape(ctx.url, true);
      const rec = executionOf(svc, ctx.principal, ctx.params.id);
      checkExecutionParams(svc, rec, shape.queryParams);
      return serve(svc, ctx, rec, shape, wanted);
    },
  });
  const latest = (format: 'json' | 'csv'): Route => ({
    method: 'GET',
    path: `/v1/query/:query_id/results${format === 'csv' ? '/csv' : ''}`,
    scope: 'Read',
    async handle(ctx) {
      const media = mediaFormat(ctx, format);
      if (typeof media !== 'string') return media;
      const shape = parseResultShape(ctx.url, true);
      const q = queryOf(svc, ctx.principal, ctx.params.query_id, 'read');
      const unknown = Object.keys(shape.queryParams).filter((k) => !q.parameters.some((p) => p.key === k));
      if (unknown.length > 0) throw new HttpError(400, MESSAGES.unknownParameters(unknown));
      const wanted: Record<string, string> = {};
      for (const p of q.parameters) {
        const given = shape.queryParams[p.key];
        if (given === undefined) continue;
        try {
          wanted[p.key] = canonicalValue(p, given, 'parameter');
        } catch (err) {
          if (err instanceof ParameterError) throw new HttpError(400, `Bad Request: ${err.message}`);
          throw err;
        }
      }
      const rec = svc.executions
        .ofQuery(ctx.principal.team, q.id)
        .find(
          (e) =>
            e.queryVersion === q.version &&
            holdsResult(e) &&
            Object.entries(wanted).every(([k, v]) => e.parameters[k] === v),
        );
      if (rec === undefined) throw new HttpError(404, MESSAGES.noLatestResult);
      return serve(svc, ctx, rec, shape, media);
    },
  });
  return [byExecution('json'), byExecution('csv'), latest('json'), latest('csv')];
}

/**
 * The format a JSON results request is answered in, by its Accept header (Arrow pages are an
 * extension: see docs/library.md), or the 406 reply. CSV operations answer CSV whatever it says.
 */
function mediaFormat(ctx: RequestContext, format: 'json' | 'csv'): Format | Reply {
  if (format === 'csv') return 'csv';
  const accept = ctx.req.headers.accept;
  const chosen = negotiate(accept, JSON_RESULT_MEDIA);
  if (chosen === ARROW_STREAM_MEDIA_TYPE) return 'arrow';
  if (chosen !== undefined) return 'json';
  return json(406, {
    error: `Not Acceptable: results are served as ${JSON_RESULT_MEDIA.join(' or ')}; the request's Accept header was ${JSON.stringify(accept)}`,
    supported: [...JSON_RESULT_MEDIA],
  });
}

async function serve(svc: ServiceContext, ctx: RequestContext, rec: ExecutionRecord, shape: ResultShape, format: Format): Promise<Reply> {
  // Held while the page is made: the result store's bound does not drop it under this read (its
  // body streams from handles opened meanwhile, which a drop does not cut).
  const end = holdsResult(rec) ? svc.executions.readLeases.begin(rec.id) : undefined;
  try {
    return await serveRecord(svc, ctx, rec, shape, format);
  } catch (err) {
    // Expired (retention, the result store's bound) while this read waited for it: answered as a
    // read of it now is, with its state and no result.
    const now = svc.executions.get(rec.id);
    if (err instanceof HttpError && err.status === 404 && now !== undefined && !holdsResult(now)) return serveRecord(svc, ctx, now, shape, format);
    throw err;
  } finally {
    end?.();
  }
}

async function serveRecord(svc: ServiceContext, ctx: RequestContext, rec: ExecutionRecord, shape: ResultShape, format: Format): Promise<Reply> {
  if (!holdsResult(rec)) {
    if (format === 'csv') throw new HttpError(400, MESSAGES.csvNotReady(rec.state));
    // Not finished, failed, canceled or expired: the state (and error) without a result.
    return jsonText(200, JSON.stringify(executionFields(rec)));
  }
  if (rec.state === 'QUERY_STATE_COMPLETED_PARTIAL' && !shape.allowPartial) throw new HttpError(400, MESSAGES.partialResult);
  // Read now: the last to expire when the result store is over its bound.
  svc.executions.noteRead(rec.id);
  const paging = pagingOf(svc, ctx, rec, shape, format);
  if (format === 'arrow') return serveArrow(paging);
  const encoded = paging.plain ? await engineCall(() => svc.engine.encodedPage(rec.id, paging.req.offset, paging.req.limit, format)) : undefined;
  if (encoded !== undefined) return serveEncoded(paging, encoded, format);

  if (format === 'csv') {
    const page = await engineCall(() => svc.engine.csvPage(rec.id, paging.req));
    const next = paging.nextOf(page.rowCount, page.totalRowCount);
    return { status: 200, contentType: 'text/csv; charset=utf-8', body: page.csv, headers: csvNextHeaders(next) };
  }

  const page = await engineCall(() => svc.engine.page(rec.id, paging.req));
  const next = paging.nextOf(page.rowCount, page.totalRowCount);
  const [before, after] = resultPageJson(rec, page, next);
  return jsonText(200, `${before}${page.rowsJson}${after}`);
}

type NextPage = { offset: number; uri: string } | undefined;

/** One results request: the page asked for, and how its answer is told. */
interface Paging {
  svc: ServiceContext;
  rec: CompletedExecution;
  req: PageRequest;
  /** All columns, unfiltered, unsorted: a byte range of the pre-encoded result, once it is there. */
  plain: boolean;
  nextOf(rowCount: number, matching: number): NextPage;
  /** Whether the page is on the grid whose compressed frames are stored. */
  framed(page: { rowCount: number }): boolean;
}

function pagingOf(svc: ServiceContext, ctx: RequestContext, rec: Paging['rec'], shape: ResultShape, format: Format): Paging {
  const columnCount = shape.columns?.length ?? rec.result.columnNames.length;
  const req: PageRequest = { offset: shape.offset, limit: effectiveLimit(shape, svc.settings, columnCount) };
  if (shape.columns !== undefined) req.columns = shape.columns;
  if (shape.params.filters !== undefined) req.filters = shape.params.filters;
  if (shape.params.sort_by !== undefined) req.sortBy = shape.params.sort_by;
  if (shape.params.sample_count !== undefined) req.sampleCount = Math.min(shape.params.sample_count, req.limit);

  // next_uri names the execution, not the query: following it keeps reading the same result even
  // when a newer execution of the query completes meanwhile.
  const apiPath = format === 'csv' ? PATHS.resultsCsv(rec.id) : PATHS.results(rec.id);
  const nextOf = (rowCount: number, matching: number): NextPage => {
    const next = shape.offset + rowCount;
    const more = req.sampleCount === undefined && rowCount > 0 && next < matching;
    // The reader holds the result until it asks for the next page (limits/readLeases.ts).
    svc.executions.readLeases.paged(rec.id, shape.offset, more ? next : undefined);
    if (!more) return undefined;
    return { offset: next, uri: nextUri(ctx.origin, apiPath, shape, next) };
  };

  // A page on the grid clients page by (the default page size, from offset 0) is compressed once
  // and stored (compressedFrames.ts); other pages are compressed per request, so that odd offsets
  // and limits do not fill the disk with frames read once.
  const pageRows = defaultPageRows(svc.settings, rec.result.columnNames.length);
  const framed = (page: { rowCount: number }): boolean =>
    page.rowCount > 0 && shape.offset % pageRows === 0 && (page.rowCount === pageRows || (page.rowCount < pageRows && shape.offset + page.rowCount === rec.result.rowCount));
  const plain = req.columns === undefined && req.filters === undefined && req.sortBy === undefined && req.sampleCount === undefined;
  return { svc, rec, req, plain, nextOf, framed };
}

async function serveArrow({ svc, rec, req, plain, nextOf, framed }: Paging): Promise<Reply> {
  const encoded = plain ? await engineCall(() => svc.engine.encodedArrowPage(rec.id, req.offset, req.limit)) : undefined;
  let page;
  try {
    page = encoded ?? (await engineCall(() => svc.engine.arrowPage(rec.id, req)));
  } catch (err) {
    // A value the Arrow type cannot hold: this page is only JSON (a client falls back on 406).
    if (err instanceof EngineError && err.kind === 'unrepresentable') return json(406, { error: `Not Acceptable: ${err.message}`, supported: ['application/json'] });
    throw err;
  }
  const next = nextOf(page.rowCount, page.totalRowCount);
  const headers = arrowPageHeaders({
    ...arrowStatusFields(rec),
    metadata: pageMetadata(rec, page),
    ...(next === undefined ? {} : { next_offset: next.offset, next_uri: next.uri }),
  });
  const reply: Reply = { status: 200, contentType: ARROW_STREAM_MEDIA_TYPE, body: partsBody('parts' in page ? page.parts : [page.arrow]), headers };
  if ('parts' in page && framed(page)) {
    const [schema, eos] = [page.parts[0], page.parts.at(-1)];
    // The batches' range open in the body, else (sent from the encoder's buffers) by its path.
    const range = page.parts.length === 3 && !(page.parts[1] instanceof Uint8Array) ? page.parts[1]! : page.rows;
    if (schema instanceof Uint8Array && eos instanceof Uint8Array) {
      reply.precompressed = storedFrames({ store: svc.engine.frameStore(rec.id), file: 'rows.arrow', head: schema, rows: range, tail: eos });
    }
  }
  return reply;
}

/** The status fields an Arrow page carries in its headers. */
function arrowStatusFields(rec: ExecutionRecord) {
  const f = executionFields(rec);
  return {
    execution_id: f.execution_id,
    ...(f.query_id === undefined ? {} : { query_id: f.query_id }),
    state: rec.state,
    ...(f.submitted_at === undefined ? {} : { submitted_at: f.submitted_at }),
    ...(f.execution_started_at === undefined ? {} : { execution_started_at: f.execution_started_at }),
    ...(f.execution_ended_at === undefined ? {} : { execution_ended_at: f.execution_ended_at }),
    ...(f.expires_at === undefined ? {} : { expires_at: f.expires_at }),
  };
}

function serveEncoded({ svc, rec, nextOf, framed }: Paging, encoded: EncodedPage, format: 'json' | 'csv'): Reply {
  const next = nextOf(encoded.rowCount, encoded.totalRowCount);
  const rows = encoded.rows === undefined ? [] : [encoded.rows];
  let head: string;
  let tail: string;
  let reply: Reply;
  if (format === 'csv') {
    [head, tail] = [`${encoded.columnNames.map(csvField).join(',')}\n`, ''];
    reply = { status: 200, contentType: 'text/csv; charset=utf-8', body: partsBody([head, ...rows]), headers: csvNextHeaders(next) };
  } else {
    const [before, after] = resultPageJson(rec, encoded, next);
    [head, tail] = [`${before}[`, `]${after}`];
    reply = { status: 200, contentType: 'application/json; charset=utf-8', body: partsBody([head, ...rows, tail]) };
  }
  if (encoded.rows !== undefined && framed(encoded)) {
    const file = format === 'csv' ? 'rows.csv' : 'rows.json';
    reply.precompressed = storedFrames({ store: svc.engine.frameStore(rec.id), file, head, rows: encoded.rows, tail });
  }
  return reply;
}

function csvNextHeaders(next: { offset: number; uri: string } | undefined): Record<string, string> {
  return next === undefined ? {} : { [CSV_NEXT_OFFSET_HEADER]: String(next.offset), [CSV_NEXT_URI_HEADER]: next.uri };
}

/**
 * The JSON page around its rows array, which goes between the two texts: the engine's row text
 * is spliced in verbatim (re-parsing it would round bigints beyond 2^53 and cost a parse and a
 * stringify per page), or streamed from the pre-encoded result.
 */
function resultPageJson(
  rec: CompletedExecution,
  page: { rowCount: number; bytes: number; columnNames: string[]; columnTypes: string[] },
  next: { offset: number; uri: string } | undefined,
): [string, string] {
  const metadata: ResultMetadata = { ...pageMetadata(rec, page), ...timingOf(rec) };
  const head = JSON.stringify(executionFields(rec)).slice(0, -1);
  const tail = next === undefined ? '' : `,"next_offset":${next.offset},"next_uri":${JSON.stringify(next.uri)}`;
  return [`${head},"result":{"rows":`, `,"metadata":${JSON.stringify(metadata)}}${tail}}`];
}

/** A bad filter, sort or column is the caller's mistake (400 with the engine's reason); no memory for the page now is 503. */
async function engineCall<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof EngineError && err.kind === 'bad_request') throw new HttpError(400, `Bad Request: ${err.message}`);
    if (err instanceof EngineError && err.kind === 'not_found') throw new HttpError(404, MESSAGES.notFound);
    // A page query is interrupted only by the service's own stop: the read is retried, not an internal error.
    if (err instanceof EngineError && err.kind === 'canceled') throw new HttpError(503, `Service Unavailable: the service is stopping (${err.message}); retry once it is started again`, { 'retry-after': '1' });
    // The page did not fit in the engine's memory beside what else runs: the same page fits later.
    if (err instanceof EngineError && err.kind === 'capacity') {
      throw new HttpError(503, `Service Unavailable: the engine is short of memory for this page now (${err.message.split('\n')[0]}); retry after a moment, or ask for fewer rows (limit)`, { 'retry-after': '1' });
    }
    throw err;
  }
}

/** A page's `result.metadata` (JSON body or Arrow header): its columns, its rows and bytes, the result's totals. */
function pageMetadata(rec: CompletedExecution, page: { rowCount: number; bytes: number; columnNames: string[]; columnTypes: string[] }): ResultMetadata {
  return {
    column_names: page.columnNames,
    column_types: page.columnTypes,
    row_count: page.rowCount,
    result_set_bytes: page.bytes,
    total_row_count: rec.result.rowCount,
    total_result_set_bytes: rec.result.bytes,
    datapoint_count: page.rowCount * page.columnNames.length,
  };
}
