import { RefreshViewRequestSchema, UpsertViewRequestSchema } from '../../protocol/index.ts';
import type { ServiceContext } from '../context.ts';
import { validateBody } from '../http/body.ts';
import { HttpError } from '../http/errors.ts';
import { json } from '../http/reply.ts';
import type { Route } from '../http/router.ts';
import { queryOf } from '../routes/lookup.ts';
import { LIST_LIMIT_MAX } from './registry.ts';
import type { ViewService } from './viewService.ts';

/** The five materialized view operations of protocol.md section 3. */
export function viewRoutes(svc: ServiceContext, views: ViewService): Route[] {
  return [
    {
      method: 'POST',
      path: '/v1/materialized-views',
      scope: 'Read/Write',
      async handle(ctx) {
        const body = validateBody(UpsertViewRequestSchema, await ctx.body());
        // The query must be one the team may read (404 Query not found otherwise).
        queryOf(svc, ctx.principal, String(body.query_id), 'read');
        return json(200, await views.upsert(ctx.principal.team, body));
      },
    },
    {
      method: 'GET',
      path: '/v1/materialized-views',
      scope: 'Read',
      async handle(ctx) {
        const { limit, offset } = listParams(ctx.url);
        return json(200, views.list(ctx.principal.team, limit, offset));
      },
    },
    {
      method: 'GET',
      path: '/v1/materialized-views/:name',
      scope: 'Read',
      async handle(ctx) {
        return json(200, views.get(ctx.principal.team, ctx.params.name ?? ''));
      },
    },
    {
      method: 'DELETE',
      path: '/v1/materialized-views/:name',
      scope: 'Read/Write',
      async handle(ctx) {
        return json(200, await views.delete(ctx.principal.team, ctx.params.name ?? ''));
      },
    },
    {
      method: 'POST',
      path: '/v1/materialized-views/:name/refresh',
      scope: 'Read/Write',
      async handle(ctx) {
        const body = validateBody(RefreshViewRequestSchema, (await ctx.body()) ?? {});
        return json(200, await views.refresh(ctx.principal.team, ctx.params.name ?? '', body.performance));
      },
    },
  ];
}

const INT = /^(0|[1-9][0-9]{0,8})$/;

/** `limit` (default and most LIST_LIMIT_MAX; more is lowered to it) and `offset` (default 0). */
function listParams(url: URL): { limit: number; offset: number } {
  for (const k of url.searchParams.keys()) {
    if (k !== 'limit' && k !== 'offset' && k !== 'api_key') throw new HttpError(400, `Bad Request: unknown parameter "${k}" (known: limit, offset)`);
  }
  const read = (name: string, dflt: number, min: number): number => {
    const v = url.searchParams.get(name);
    if (v === null) return dflt;
    if (!INT.test(v) || Number(v) < min) throw new HttpError(400, `Bad Request: ${name} must be an integer of at least ${min}, got "${v}"`);
    return Number(v);
  };
  return { limit: Math.min(read('limit', LIST_LIMIT_MAX, 1), LIST_LIMIT_MAX), offset: read('offset', 0, 0) };
}
