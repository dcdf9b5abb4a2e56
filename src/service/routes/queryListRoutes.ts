import type { QueryList } from '../../protocol/index.ts';
import type { ServiceContext } from '../context.ts';
import { listParams } from '../http/listParams.ts';
import { json } from '../http/reply.ts';
import type { Route } from '../http/router.ts';
import { formatTimestamp as ts } from '../timestamp.ts';

/** GET /v1/queries: the team's saved queries, newest first (limit 20 by default, 1000 at most). */
export function queryListRoutes(svc: ServiceContext): Route[] {
  return [
    {
      method: 'GET',
      path: '/v1/queries',
      scope: 'Read',
      async handle(ctx) {
        const { limit, offset } = listParams(ctx.url, 20, 1000);
        const { page, total } = svc.queries.list(ctx.principal.team, limit, offset);
        const out: QueryList = {
          queries: page.map((q) => ({
            id: q.id,
            name: q.name,
            description: q.description,
            owner: q.team,
            tags: q.tags,
            is_private: q.isPrivate,
            is_archived: q.isArchived,
            created_at: ts(q.createdAt),
            updated_at: ts(q.updatedAt),
          })),
          total,
        };
        return json(200, out);
      },
    },
  ];
}
