import { UsageRequestSchema } from '../../protocol/index.ts';
import { validateBody } from '../http/body.ts';
import { json } from '../http/reply.ts';
import type { Route } from '../http/router.ts';
import { billingUsageOf, usageOf, type UsageSources } from './usage.ts';

/**
 * GET /v1/usage (Admin): the service's own answer, credits used in the cycle, executions, storage.
 * POST /v1/usage with an optional `{start_date, end_date}` body is how the official clients ask,
 * and is answered in the shape they decode (billing periods, bytes, private queries).
 */
export function usageRoutes(sources: UsageSources): Route[] {
  return [
    {
      method: 'GET',
      path: '/v1/usage',
      scope: 'Admin',
      async handle(ctx) {
        return json(200, await usageOf(ctx.principal.team, sources));
      },
    },
    {
      method: 'POST',
      path: '/v1/usage',
      scope: 'Admin',
      async handle(ctx) {
        const period = validateBody(UsageRequestSchema, (await ctx.body()) ?? {});
        return json(200, await billingUsageOf(ctx.principal.team, sources, period));
      },
    },
  ];
}
