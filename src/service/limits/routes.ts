import { UsageRequestSchema } from '../../protocol/index.ts';
import { validateBody } from '../http/body.ts';
import { json } from '../http/reply.ts';
import type { Route } from '../http/router.ts';
import { usageOf, type UsageSources } from './usage.ts';

/**
 * GET /v1/usage (Admin): credits used in the cycle, executions, storage. The official clients ask
 * with POST and an optional `{start_date, end_date}` body; the service keeps only the current
 * cycle, so a POST with a period is refused rather than answered with another period's figures.
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
        validateBody(UsageRequestSchema, (await ctx.body()) ?? {});
        return json(200, await usageOf(ctx.principal.team, sources));
      },
    },
  ];
}
