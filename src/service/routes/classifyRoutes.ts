import { ClassifyQueryRequestSchema, ClassifySqlRequestSchema, type ClassifyResponse } from '../../protocol/index.ts';
import type { ServiceContext } from '../context.ts';
import type { SqlClassification } from '../engine/types.ts';
import { validateBody } from '../http/body.ts';
import { HttpError } from '../http/errors.ts';
import { json } from '../http/reply.ts';
import type { Route } from '../http/router.ts';
import { ParameterError, resolveParameters, substitute } from '../parameters.ts';
import { queryOf } from './lookup.ts';

/**
 * POST /v1/sql/classify and /v1/query/:query_id/classify (an extension): the SQL judged by the
 * sandbox as the caller's execution would be, nothing run, nothing charged. Read scope: it tells
 * what a statement does, which a Read key can already learn by failing to execute it.
 */
export function classifyRoutes(svc: ServiceContext): Route[] {
  return [
    {
      method: 'POST',
      path: '/v1/sql/classify',
      scope: 'Read',
      async handle(ctx) {
        const body = validateBody(ClassifySqlRequestSchema, await ctx.body());
        return json(200, response(await svc.executions.classify(ctx.principal.team, body.sql)));
      },
    },
    {
      method: 'POST',
      path: '/v1/query/:query_id/classify',
      scope: 'Read',
      async handle(ctx) {
        const q = queryOf(svc, ctx.principal, ctx.params.query_id, 'read');
        const body = validateBody(ClassifyQueryRequestSchema, (await ctx.body()) ?? {});
        let sql: string;
        try {
          sql = substitute(q.sql, q.parameters, resolveParameters(q.parameters, body.query_parameters ?? {}));
        } catch (err) {
          if (err instanceof ParameterError) throw new HttpError(400, err.message.startsWith('unknown parameters') ? err.message : `Bad Request: ${err.message}`);
          throw err;
        }
        return json(200, response(await svc.executions.classify(ctx.principal.team, sql)));
      },
    },
  ];
}

function response(c: SqlClassification): ClassifyResponse {
  return { writes: c.statements.some((s) => s.writes), statements: c.statements, ...(c.denial === undefined ? {} : { denial: c.denial }) };
}
