// Datasets, as the real service lists and searches them. Here the datasets are the uploaded
// tables (type `uploaded_table`): the team's own, and other teams' public ones.
import { DATASET_TYPES, SearchDatasetsRequestSchema, type Dataset, type DatasetList, type SearchDatasetsResponse } from '../../protocol/index.ts';
import { validateBody } from '../http/body.ts';
import { HttpError } from '../http/errors.ts';
import { listParams } from '../http/listParams.ts';
import { json } from '../http/reply.ts';
import type { Route } from '../http/router.ts';
import { formatTimestamp as ts } from '../timestamp.ts';
import type { DatasetRecord, Datasets } from './datasets.ts';
import { protocolType } from './uploadTables.ts';

const TYPE = 'uploaded_table';

export function datasetRoutes(datasets: Datasets): Route[] {
  const visible = (team: string): DatasetRecord[] =>
    datasets
      .all()
      .filter((r) => r.team === team || !r.isPrivate)
      .sort((a, b) => fullName(a).localeCompare(fullName(b)));
  return [
    {
      method: 'GET',
      path: '/v1/datasets',
      scope: 'Read',
      async handle(ctx) {
        const { limit, offset } = listParams(ctx.url, 50, 250, ['owner_handle', 'type']);
        const type = ctx.url.searchParams.get('type');
        if (type !== null && !(DATASET_TYPES as readonly string[]).includes(type)) {
          throw new HttpError(400, `Bad Request: type must be one of ${DATASET_TYPES.join(', ')}, got "${type}"`);
        }
        const owner = ctx.url.searchParams.get('owner_handle');
        const all = visible(ctx.principal.team).filter((r) => (type === null || type === TYPE) && (owner === null || r.team === owner));
        const out: DatasetList = { datasets: all.slice(offset, offset + limit).map(datasetView), total: all.length };
        return json(200, out);
      },
    },
    {
      method: 'POST',
      path: '/v1/datasets/search',
      scope: 'Read',
      async handle(ctx) {
        const req = validateBody(SearchDatasetsRequestSchema, (await ctx.body()) ?? {});
        const team = ctx.principal.team;
        const words = (req.query ?? '').toLowerCase().split(/\s+/).filter(Boolean);
        const all = visible(team).filter(
          (r) =>
            (req.include_private !== false || !r.isPrivate) &&
            (req.owner_scope === undefined || req.owner_scope === 'all' || r.team === team) &&
            (req.dataset_types === undefined || req.dataset_types.includes(TYPE)) &&
            (req.schemas === undefined || req.schemas.includes(r.team)) &&
            words.every((w) => `${fullName(r)} ${r.description}`.toLowerCase().includes(w)),
        );
        const limit = req.limit ?? 20;
        const offset = req.offset ?? 0;
        const hasMore = offset + limit < all.length;
        const out: SearchDatasetsResponse = {
          total: all.length,
          results: all.slice(offset, offset + limit).map((r) => ({
            full_name: fullName(r),
            category: 'uploaded',
            dataset_type: TYPE,
            visibility: r.isPrivate ? 'private' : 'public',
            owner_scope: r.team === team ? 'team' : 'other',
            description: r.description,
            ...(req.include_schema === true ? { schema: { columns: datasetView(r).columns } } : {}),
            ...(req.include_metadata === true ? { metadata: { row_count: r.rowCount, table_size_bytes: r.bytes } } : {}),
          })),
          pagination: { limit, offset, has_more: hasMore, ...(hasMore ? { next_offset: offset + limit } : {}) },
        };
        return json(200, out);
      },
    },
    {
      method: 'GET',
      path: '/v1/datasets/:slug',
      scope: 'Read',
      async handle(ctx) {
        const slug = ctx.params.slug!;
        const [catalog, team, name, ...rest] = slug.split('.');
        const rec = catalog === 'service' && rest.length === 0 && team !== undefined && name !== undefined ? datasets.get(team, name) : undefined;
        if (rec === undefined || (rec.team !== ctx.principal.team && rec.isPrivate)) {
          throw new HttpError(404, `Dataset not found: "${slug}" (a dataset is named service.<team>.<table>; list them with GET /v1/datasets)`);
        }
        return json(200, datasetView(rec));
      },
    },
  ];
}

function fullName(r: DatasetRecord): string {
  return `service.${r.team}.${r.name}`;
}

function datasetView(r: DatasetRecord): Dataset {
  return {
    type: TYPE,
    full_name: fullName(r),
    is_private: r.isPrivate,
    columns: r.columns.map((c) => ({ name: c.name, type: protocolType(c.type), nullable: c.nullable })),
    owner: { handle: r.team, type: 'team' },
    metadata: { description: r.description, row_count: String(r.rowCount), table_size_bytes: String(r.bytes) },
    created_at: ts(r.createdAt),
    updated_at: ts(r.updatedAt),
  };
}
