import { UploadCsvRequestSchema } from '../../protocol/index.ts';
import { validateBody } from '../http/body.ts';
import { json } from '../http/reply.ts';
import type { Route } from '../http/router.ts';
import type { Datasets } from './datasets.ts';

/** POST /v1/uploads/csv. */
export function uploadRoutes(datasets: Datasets): Route[] {
  return [
    {
      method: 'POST',
      path: '/v1/uploads/csv',
      scope: 'Write',
      async handle(ctx) {
        const body = validateBody(UploadCsvRequestSchema, await ctx.body());
        return json(200, await datasets.upload(ctx.principal.team, body));
      },
    },
  ];
}
