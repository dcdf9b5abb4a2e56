import { CreateTableRequestSchema, INSERT_MEDIA_TYPES } from '../../protocol/index.ts';
import { validateBody } from '../http/body.ts';
import { HttpError } from '../http/errors.ts';
import { listParams } from '../http/listParams.ts';
import { json } from '../http/reply.ts';
import type { Route } from '../http/router.ts';
import type { InsertRows } from './tableOps.ts';
import type { UploadTables } from './uploadTables.ts';

/**
 * Uploads v2: GET/POST /v1/uploads, POST /v1/uploads/{namespace}/{table}/insert and /clear,
 * DELETE /v1/uploads/{namespace}/{table}; and the older /v1/table/... paths the official clients
 * still call (GET /v1/tables, POST /v1/table/create, /v1/table/{namespace}/{table}/...).
 */
export function tableRoutes(tables: UploadTables): Route[] {
  const each = (paths: string[], route: Omit<Route, 'path'>): Route[] => paths.map((path) => ({ ...route, path }));
  return [
    ...each(['/v1/uploads', '/v1/tables'], {
      method: 'GET',
      scope: 'Read',
      async handle(ctx) {
        const { limit, offset } = listParams(ctx.url, 50, 10_000);
        return json(200, tables.list(ctx.principal.team, limit, offset));
      },
    }),
    ...each(['/v1/uploads', '/v1/table/create'], {
      method: 'POST',
      scope: 'Read/Write',
      async handle(ctx) {
        const body = validateBody(CreateTableRequestSchema, await ctx.body());
        return json(200, await tables.create(ctx.principal.team, body));
      },
    }),
    ...each(['/v1/uploads/:namespace/:table/insert', '/v1/table/:namespace/:table/insert'], {
      method: 'POST',
      scope: 'Read/Write',
      async handle(ctx) {
        const rows: InsertRows = { format: insertFormat(ctx.req.headers['content-type']), data: await ctx.rawBody() };
        return json(200, await tables.insert(ctx.principal.team, ctx.params.namespace!, ctx.params.table!, rows));
      },
    }),
    ...each(['/v1/uploads/:namespace/:table/clear', '/v1/table/:namespace/:table/clear'], {
      method: 'POST',
      scope: 'Read/Write',
      async handle(ctx) {
        return json(200, await tables.clear(ctx.principal.team, ctx.params.namespace!, ctx.params.table!));
      },
    }),
    ...each(['/v1/uploads/:namespace/:table', '/v1/table/:namespace/:table'], {
      method: 'DELETE',
      scope: 'Read/Write',
      async handle(ctx) {
        return json(200, await tables.delete(ctx.principal.team, ctx.params.namespace!, ctx.params.table!));
      },
    }),
  ];
}

/** The rows' format from the Content-Type: CSV or NDJSON; anything else is 400 saying which two. */
function insertFormat(header: string | undefined): InsertRows['format'] {
  const type = header?.split(';')[0]?.trim().toLowerCase();
  if (type === INSERT_MEDIA_TYPES.csv) return 'csv';
  if (type === INSERT_MEDIA_TYPES.ndjson || type === 'application/ndjson') return 'ndjson';
  throw new HttpError(400, `Bad Request: Content-Type must be ${INSERT_MEDIA_TYPES.csv} or ${INSERT_MEDIA_TYPES.ndjson}, got ${header === undefined ? 'none' : `"${header}"`}`);
}
