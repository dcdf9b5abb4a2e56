import { json } from '../http/reply.ts';
import type { Route } from '../http/router.ts';
import { usageOf, type UsageSources } from './usage.ts';

/** GET /v1/usage (Admin): credits used in the cycle, executions, storage. */
export function usageRoutes(sources: UsageSources): Route[] {
  return [
    {
      method: 'GET',
      path: '/v1/usage',
      scope: 'Admin',
      async handle(ctx) {
        return json(200, usageOf(ctx.principal.team, sources));
      },
    },
  ];
}
