import { CreateQueryRequestSchema, ExecuteQueryRequestSchema, UpdateQueryRequestSchema } from '../../protocol/index.ts';
import type { ExecuteResponse } from '../../protocol/index.ts';
import type { ServiceContext } from '../context.ts';
import { validateBody } from '../http/body.ts';
import { HttpError } from '../http/errors.ts';
import { json } from '../http/reply.ts';
import type { Route } from '../http/router.ts';
import { ParameterError, resolveParameters, substitute } from '../parameters.ts';
import { queryView } from '../savedQueries.ts';
import { requestTier } from '../settings.ts';
import { queryOf } from './lookup.ts';

/** Saved queries: create, get, update, archive, unarchive, private, unprivate, execute. */
export function queryRoutes(svc: ServiceContext): Route[] {
  // The official clients flip privacy with these two bodiless POSTs (PATCH is_private works too).
  const setPrivate = (isPrivate: boolean): Route => ({
    method: 'POST',
    path: `/v1/query/:query_id/${isPrivate ? 'private' : 'unprivate'}`,
    scope: 'Read/Write',
    async handle(ctx) {
      const q = queryOf(svc, ctx.principal, ctx.params.query_id, 'modify');
      await svc.queries.update(q.id, { is_private: isPrivate });
      return json(200, { query_id: q.id });
    },
  });
  const setArchived = (archived: boolean): Route => ({
    method: 'POST',
    path: `/v1/query/:query_id/${archived ? 'archive' : 'unarchive'}`,
    scope: 'Read/Write',
    async handle(ctx) {
      const q = queryOf(svc, ctx.principal, ctx.params.query_id, 'modify');
      await svc.queries.update(q.id, { is_archived: archived });
      return json(200, { query_id: q.id });
    },
  });
  return [
    {
      method: 'POST',
      path: '/v1/query',
      scope: 'Read/Write',
      async handle(ctx) {
        const body = validateBody(CreateQueryRequestSchema, await ctx.body());
        const q = await asBadRequest(() => svc.queries.create(ctx.principal.team, body));
        return json(200, { query_id: q.id });
      },
    },
    {
      method: 'GET',
      path: '/v1/query/:query_id',
      scope: 'Read',
      async handle(ctx) {
        return json(200, queryView(queryOf(svc, ctx.principal, ctx.params.query_id, 'read')));
      },
    },
    {
      method: 'PATCH',
      path: '/v1/query/:query_id',
      scope: 'Read/Write',
      async handle(ctx) {
        const q = queryOf(svc, ctx.principal, ctx.params.query_id, 'modify');
        const body = validateBody(UpdateQueryRequestSchema, await ctx.body());
        await asBadRequest(() => svc.queries.update(q.id, body));
        return json(200, { query_id: q.id });
      },
    },
    setArchived(true),
    setArchived(false),
    setPrivate(true),
    setPrivate(false),
    {
      method: 'POST',
      path: '/v1/query/:query_id/execute',
      scope: 'Read',
      rate: 'write',
      async handle(ctx) {
        const q = queryOf(svc, ctx.principal, ctx.params.query_id, 'read');
        const body = validateBody(ExecuteQueryRequestSchema, (await ctx.body()) ?? {});
        if (q.isArchived) throw new HttpError(403, `Not allowed: query ${q.id} is archived; unarchive it to execute it`);
        const parameters = await asBadRequest(async () => resolveParameters(q.parameters, body.query_parameters ?? {}));
        const sql = substitute(q.sql, q.parameters, parameters);
        // submit checks the team's credits for the billing cycle (402) before anything is recorded.
        const rec = await svc.executions.submit({
          team: ctx.principal.team,
          sql,
          queryId: q.id,
          queryVersion: q.version,
          parameters,
          performance: requestTier(svc.settings, ctx.principal.team, body.performance),
        });
        const out: ExecuteResponse = { execution_id: rec.id, state: 'QUERY_STATE_PENDING' };
        return json(200, out);
      },
    },
  ];
}

/** ParameterError is the caller's mistake: 400 with its message (which names the parameter). */
async function asBadRequest<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof ParameterError) {
      throw new HttpError(400, err.message.startsWith('unknown parameters') ? err.message : `Bad Request: ${err.message}`);
    }
    throw err;
  }
}
