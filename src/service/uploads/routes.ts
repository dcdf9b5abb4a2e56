import { UploadCsvRequestSchema } from '../../protocol/index.ts';
import { validateBody } from '../http/body.ts';
import { json } from '../http/reply.ts';
import type { Route } from '../http/router.ts';
import type { Datasets } from './datasets.ts';

/** POST /v1/uploads/csv, and its older path /v1/table/upload/csv that the official clients still call. */
export function uploadRoutes(datasets: Datasets): Route[] {
  return ['/v1/uploads/csv', '/v1/table/upload/csv'].map(
    (path): Route => ({
      method: 'POST',
      path,
      scope: 'Read/Write',
      async handle(ctx) {
        const body = validateBody(UploadCsvRequestSchema, await ctx.body());
        return json(200, await datasets.upload(ctx.principal.team, body));
      },
    }),
  );
}
