import { ExecuteSqlRequestSchema, type ExecuteResponse } from '../../protocol/index.ts';
import type { ServiceContext } from '../context.ts';
import { validateBody } from '../http/body.ts';
import { json } from '../http/reply.ts';
import type { Route } from '../http/router.ts';
import { requestTier } from '../settings.ts';
import { statusOf } from '../statusView.ts';
import { executionOf } from './lookup.ts';

/** POST /v1/sql/execute, GET /v1/execution/:id/status, POST /v1/execution/:id/cancel. */
export function executionRoutes(svc: ServiceContext): Route[] {
  return [
    {
      method: 'POST',
      path: '/v1/sql/execute',
      scope: 'Read',
      rate: 'write',
      async handle(ctx) {
        const body = validateBody(ExecuteSqlRequestSchema, await ctx.body());
        const rec = await svc.executions.submit({
          team: ctx.principal.team,
          sql: body.sql,
          queryId: 0,
          queryVersion: 0,
          parameters: {},
          performance: requestTier(svc.settings, ctx.principal.team, body.performance),
        });
        const out: ExecuteResponse = { execution_id: rec.id, state: 'QUERY_STATE_PENDING' };
        return json(200, out);
      },
    },
    {
      method: 'GET',
      path: '/v1/execution/:id/status',
      scope: 'Read',
      async handle(ctx) {
        const rec = executionOf(svc, ctx.principal, ctx.params.id);
        const ex = svc.executions;
        return json(200, statusOf(rec, { maxInflight: ex.maxInflight(rec.team), running: ex.running(rec.team), queuePosition: ex.queuePosition(rec) }));
      },
    },
    {
      method: 'POST',
      path: '/v1/execution/:id/cancel',
      // A key that may start an execution may stop it.
      scope: 'Read',
      rate: 'write',
      async handle(ctx) {
        // The body, if any, carries nothing: it is neither read nor required.
        const rec = executionOf(svc, ctx.principal, ctx.params.id);
        return json(200, { success: await svc.executions.cancel(rec.id) });
      },
    },
  ];
}
