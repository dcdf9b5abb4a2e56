import { z } from 'zod';

const bearer = z.strictObject({
  type: z.literal('bearer').describe('A static bearer token (Authorization: Bearer ...).'),
  token: z.string().min(1).describe('The bearer token, from the environment: token: ${ICEBERG_TOKEN}. Redacted wherever configuration is shown.'),
});

const oauth2 = z.strictObject({
  type: z.literal('oauth2').describe('OAuth2 client credentials, exchanged for an access token that is renewed before it expires.'),
  client_id: z.string().min(1).describe('OAuth2 client id (Polaris: the principal client id).'),
  client_secret: z.string().min(1).describe('OAuth2 client secret, from the environment: client_secret: ${ICEBERG_CLIENT_SECRET}. Redacted wherever configuration is shown.'),
  token_uri: z
    .url({ protocol: /^https?$/ })
    .optional()
    .describe('Token endpoint of the client-credentials exchange (default: <uri>/v1/oauth/tokens, the catalog\'s own, as Polaris and Lakekeeper\'s test setups serve it; Unity and Keycloak-backed catalogs have their own).'),
  scope: z.string().min(1).optional().describe('Scope asked for (default catalog; Polaris: PRINCIPAL_ROLE:ALL).'),
});

const sigv4 = z.strictObject({
  type: z.literal('sigv4').describe('AWS Signature V4 on every request (Glue, S3 Tables).'),
  region: z.string().min(1).describe('AWS region the catalog endpoint signs for (us-east-1).'),
  signing_name: z
    .string()
    .min(1)
    .optional()
    .describe('Service name in the signature (default glue: the Glue Iceberg REST endpoint; s3tables for S3 Tables). Credentials come from the AWS default chain (environment, profile, instance role).'),
});

const none = z.strictObject({ type: z.literal('none').describe('No authentication (a catalog on a trusted network).') });

/** The `catalog:` block of an Iceberg output. */
export const catalogConfigSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('path').describe('The table is its path: metadata/v<N>.metadata.json created only if absent (the default).') }),
  z.strictObject({
    type: z.literal('rest').describe('An Iceberg REST catalog (Polaris, Nessie, Lakekeeper, Unity, Glue, S3 Tables, R2): the table is committed through it.'),
    uri: z.url({ protocol: /^https?$/ }).describe('The catalog\'s base URI, the one engines are given (https://catalog.example.com/api/catalog); requests go to <uri>/v1/...'),
    warehouse: z.string().min(1).optional().describe('Warehouse asked for in GET /v1/config (Polaris: the catalog name; Glue: the account id; S3 Tables: the table bucket ARN).'),
    namespace: z
      .union([z.string().min(1), z.array(z.string().min(1)).min(1)])
      .describe('The table\'s namespace: a name, dotted levels (analytics.events) or a list of levels.'),
    table: z.string().min(1).optional().describe('The table\'s name in the namespace (default: the last segment of the output path).'),
    create: z.boolean().optional().describe('Create the namespace and the table when absent (default true); false refuses an absent one before the query runs.'),
    auth: z.discriminatedUnion('type', [bearer, oauth2, sigv4, none]).optional().describe('How requests authenticate (default none).'),
    access_delegation: z
      .enum(['vended-credentials', 'none'])
      .optional()
      .describe(
        'vended-credentials (default): ask the catalog for short-lived storage credentials of the table (X-Iceberg-Access-Delegation) and write an S3 table with them when it gives some; none: do not ask. Without vended credentials the output\'s own storage credentials are used.',
      ),
  }),
]);

export type CatalogConfig = z.infer<typeof catalogConfigSchema>;
export type RestCatalogConfig = Extract<CatalogConfig, { type: 'rest' }>;
export type CatalogAuth = NonNullable<RestCatalogConfig['auth']>;

/** Namespace levels from the config's spelling. */
export function namespaceLevels(namespace: string | readonly string[]): string[] {
  return typeof namespace === 'string' ? namespace.split('.') : [...namespace];
}

/** The table name a REST catalog output commits to: configured, or the last segment of the output path. */
export function tableName(config: RestCatalogConfig, path: string): string {
  return config.table ?? path.replace(/\/+$/, '').split('/').pop()!;
}

/** What an output commits to, for `validate` and `--plan`: the table, and the catalog that keeps it (none: its path). */
export interface CatalogTarget {
  /** `rest <uri> warehouse <w>`, or undefined for a path table. */
  readonly catalog: string | undefined;
  /** The catalog's `namespace.table`, or the path table's location. */
  readonly table: string;
}

export function catalogTarget(config: CatalogConfig | undefined, path: string): CatalogTarget {
  if (config === undefined || config.type === 'path') return { catalog: undefined, table: path };
  const warehouse = config.warehouse === undefined ? '' : ` warehouse ${config.warehouse}`;
  return { catalog: `rest ${config.uri}${warehouse}`, table: [...namespaceLevels(config.namespace), tableName(config, path)].join('.') };
}

/** One line for people: `Iceberg table a.b in catalog rest https://... warehouse w`, or the path table's. */
export function targetText(target: CatalogTarget): string {
  return target.catalog === undefined ? `Iceberg table at ${target.table} (no catalog: committed by its metadata/v<N>.metadata.json)` : `Iceberg table ${target.table} in catalog ${target.catalog}`;
}
