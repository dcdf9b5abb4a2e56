import { readFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { LineCounter, parseDocument } from 'yaml';
import { interpolateDocument, type Env } from '../config/interpolate.ts';
import { ConfigError } from '../errors.ts';
import { RATE_PLAN_NAMES, RATE_PLANS, SCOPES, TEAM_NAME, type Performance } from '../protocol/index.ts';
import { SQL_DIALECTS } from './engine/dialect/dialects.ts';

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

const nonNegInt = () => z.number().int().nonnegative();
const posInt = () => z.number().int().positive();
const share = () => z.number().min(0).max(1);

export const PlanSchema = z.strictObject({
  credits_per_cycle: nonNegInt().default(10_000).describe('Credits a team may spend per billing cycle; a submission that would exceed them gets 402'),
  max_inflight: posInt().default(3).describe('Executions of the team running at once; more wait PENDING in FIFO order'),
  performance: z.enum(['small', 'medium', 'large']).default('medium').describe("The tier an execution (or a view's refresh) runs at when its request names none, as the real service lets the plan decide"),
  storage_quota_bytes: nonNegInt().default(MiB).describe('Storage quota of everything the team stores: materialized views, uploaded datasets and the tables its SQL creates in service.<team>; a refresh, upload or execution that would exceed it fails'),
  rate_limit: z
    .preprocess(
      (v) => (typeof v === 'string' && Object.hasOwn(RATE_PLANS, v) ? { ...RATE_PLANS[v as keyof typeof RATE_PLANS] } : v),
      z.strictObject(
        {
          read: nonNegInt().optional().describe('Read operations (status, results, get, list) per minute per key; 0 = off'),
          write: nonNegInt().optional().describe('Write operations (executions, cancels, changes) per minute per key; 0 = off'),
        },
        { error: (issue) => (issue.code === 'invalid_type' ? `expected a plan name (${RATE_PLAN_NAMES.join(', ')}) or { read, write } requests per minute, got ${JSON.stringify(issue.input)}` : undefined) },
      ),
    )
    .optional()
    .describe("Per-key request rates of the team's keys: a plan name (free 40/15, plus 200/70, enterprise 1000/350 read/write per minute, the real service's published figures) or { read, write }; unset classes: limits.read_requests_per_minute / write_requests_per_minute"),
});

export const KeySchema = z.strictObject({
  key: z.string().min(8, 'an API key has at least 8 characters').describe('The API key as clients send it'),
  scopes: z
    .array(z.preprocess((s) => (s === 'Write' ? 'Read/Write' : s), z.enum(SCOPES)))
    .min(1)
    .describe('Read, Read/Write (Write is read as it) and/or Admin; each includes the ones before. Read executes SQL and saved queries and reads results; Read/Write also writes queries, uploads and views; Admin also the team\'s keys and limits'),
});

export const TeamSchema = z.strictObject({
  name: z.string().regex(TEAM_NAME, 'a team name starts with a-z and holds a-z, 0-9 and _').describe('Team name'),
  plan: PlanSchema.prefault({}).describe("The team's credits, concurrency, storage quota and request rates"),
  keys: z.array(KeySchema).default([]).describe("The team's API keys and their scopes"),
  sql_dialect: z.enum(SQL_DIALECTS).optional().describe("The dialect of the team's SQL (statements, saved queries, materialized views); unset: the service's sql_dialect"),
});

export const TierSchema = z.strictObject({
  threads: posInt().describe('Engine threads wanted by an execution of this tier; advisory: DuckDB\'s threads setting is per instance (src/service/README.md)'),
  timeout_ms: posInt().describe('Execution timeout; a timed-out execution is FAILED and costs 0'),
  cost_factor: z.number().positive().describe('Multiplier of limits.credits_per_execution'),
  memory_limit_bytes: posInt().describe('Engine memory an execution of this tier may use; more fails it (FAILED, capacity, cost 0). The engine\'s memory limit is the sum over the executions running (src/service/README.md)'),
  temp_limit_bytes: posInt().describe('Temporary disk (spilled data) an execution of this tier may use; more fails it (FAILED, capacity, cost 0)'),
});

export const LimitsSchema = z.strictObject({
  page_rows: posInt().default(32_000).describe('Most rows on one result page'),
  datapoints_per_request: posInt().default(250_000).describe('Most cells on one result page unless ignore_max_datapoints_per_request=true'),
  retention_days: z.number().positive().default(90).describe('Results expire this long after the execution ended'),
  execution_record_retention_days: z
    .number()
    .nonnegative()
    .default(7)
    .describe("How long an execution's record (its state, cost and error) is kept after its result expired, or after it ended without one (failed, cancelled); then it is deleted from memory and disk by the retention sweep (and at start), and its status answers 404 saying so. Bounds the records an every-minute schedule leaves"),
  result_store_max_bytes: posInt()
    .default(2 * GiB)
    .describe('Most bytes the stored results (result files, encodings, compressed pages) may take on disk; past it the least recently read results expire early. A result being read (a page request in flight, or a reader paging through it: see result_read_lease_ms) and the one used last are kept: the store exceeds its bound while they are read, and is bounded again once reading ends. Shown by sluice usage'),
  result_read_lease_ms: posInt()
    .default(300_000)
    .describe("How long a result stays protected from the result store's bound after it was stored, or after a page of it with a next page was read, when its next page is not asked for (a reader that reads to the end releases it at once). Longer than a client's whole retry budget (60 s) and a slow sink's stall between pages"),
  max_result_bytes: posInt().default(8 * GiB).describe('Larger results are truncated: COMPLETED_PARTIAL'),
  execution_timeout_ms: posInt().default(30 * 60_000).describe('Default execution timeout of every tier'),
  credits_per_execution: nonNegInt().default(10).describe('Base cost of an execution that ran, times the tier factor'),
  max_body_bytes: posInt().default(10 * MiB).describe('Larger request bodies get 413'),
  sweep_interval_ms: posInt().default(60_000).describe('How often expired results are looked for (they also expire lazily on read)'),
  read_requests_per_minute: nonNegInt().default(0).describe('Per-key rate limit of read operations (status, results, get, list), requests per minute; 0 = off'),
  write_requests_per_minute: nonNegInt().default(0).describe('Per-key rate limit of write operations (executions, cancels and changes), requests per minute; 0 = off'),
  billing_cycle_days: posInt().default(30).describe('Length of a billing cycle, in days from the Unix epoch'),
  view_scheduler_interval_ms: posInt().default(20_000).describe('How often the view scheduler looks for due refreshes (cron has minute resolution)'),
});

export const FaultsSchema = z.strictObject({
  latency_ms: nonNegInt().default(0).describe('Added to every request before it is handled'),
  error_rate: share().default(0).describe('Share of requests answered with an error status instead of being handled'),
  error_statuses: z.array(z.union([z.literal(500), z.literal(429), z.literal(502), z.literal(503)])).min(1).default([500, 429])
    .describe('Statuses a faulted request gets, picked at random'),
  retry_after_seconds: nonNegInt().default(1).describe('Retry-After of a faulted 429'),
  reset_rate: share().default(0).describe('Share of GET responses whose connection is reset halfway through the body'),
});

/** A size as DuckDB reads it: a whole number of bytes, or a number and a unit (`256MiB`, `2GB`). */
const SIZE = /^\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)$/i;
const size = () =>
  z.union([posInt(), z.string().regex(SIZE, 'a size is a number of bytes or a number with a unit: B, KB, MB, GB, TB, KiB, MiB, GiB or TiB (e.g. 512MiB)')]);

/**
 * The engine's bounds, shared by every team and execution. Defaults fit a small container (see
 * docs/local-service.md): what a result needs beyond memory_limit is spilled to temp_directory.
 */
export const EngineSchema = z.strictObject({
  memory_limit: size().default('256MiB').describe("DuckDB's memory limit (its buffer pool: tables, results being written, sorts, joins); work beyond it spills to temp_directory"),
  threads: posInt().optional().describe("DuckDB's worker threads (default: the core count, at most 4)"),
  temp_directory: z.string().min(1).optional().describe('Where DuckDB spills what does not fit in memory_limit (default: engine/tmp in the data directory); relative to the working directory'),
  max_temp_directory_size: size().default('8GiB').describe('Most disk the spilled data may take; a query that needs more fails with an out-of-memory error'),
  memory_admission: z
    .enum(['share', 'reserve'])
    .optional()
    .describe(
      "How executions running at once share memory_limit. share (default): all run, bounded together by the sum of their tiers' bounds; when they need more together, whichever allocates next fails. reserve: an execution starts only when its tier's memory and temp bounds (at most the engine's) fit beside those running, and waits otherwise (the wait counts toward its timeout): each can use its whole bound, but fewer run at once (src/service/README.md)",
    ),
  encode_results: z
    .enum(['on_first_read', 'at_completion', 'when_idle'])
    .default('on_first_read')
    .describe(
      "When a result's JSON, CSV and Arrow pages are written to disk for reading as byte ranges: on_first_read (default), each format when a reader first asks for a page of it, that read served as the encoder writes (a job reading Arrow never pays for JSON or CSV; later reads are byte ranges); at_completion, every format as the execution's last step (the first read of any format as fast as any later one; the execution takes longer and every format takes disk; a result over 1 GiB or 10M rows is encoded when idle instead); or when_idle, every format in the background once no execution or page query runs (reads until then are built per request)",
    ),
  walled_teams: z
    .boolean()
    .default(true)
    .describe(
      "Each team's SQL runs on a DuckDB instance of its own that attaches only the team's own file (teams/<team>.duckdb) and snapshots of other teams' public views and uploads, so other teams' private objects are out of what DuckDB can open even for SQL past the sandbox's lists. An existing service.duckdb is split into the teams' files at the first start (kept as service.duckdb.split); it is not joined back when this is turned off again (src/service/README.md)",
    ),
});

export const ServiceSettingsSchema = z
  .strictObject({
    teams: z.array(TeamSchema).min(1).describe('Teams, their plans and API keys'),
    limits: LimitsSchema.prefault({}).describe('Limits of every team: result pages, retention, result size, timeouts, credits, request sizes and rates'),
    tiers: z
      .strictObject({ small: TierSchema.partial().prefault({}), medium: TierSchema.partial().prefault({}), large: TierSchema.partial().prefault({}) })
      .prefault({})
      .describe('Performance tiers (the legacy free runs as small); unset fields: small 1 thread x0.5, 512 MiB memory, 2 GiB temp; medium 1 thread x1, 1 GiB memory, 4 GiB temp; large 2 threads x2, 2 GiB memory, 8 GiB temp; timeout limits.execution_timeout_ms'),
    faults: FaultsSchema.prefault({}).describe('Misbehaviour on purpose (latency, error answers, reset connections), to test clients against; all off by default'),
    datasets: z.array(z.enum(['sample'])).default(['sample']).describe('Datasets loaded when the service starts'),
    sql_dialect: z
      .enum(SQL_DIALECTS)
      .default('dunesql')
      .describe("The dialect submitted SQL, saved queries and materialized views are read in: dunesql (the real service's: Trino's syntax and functions, 0x varbinary literals, uint256 / int256, Dune's varbinary functions; translated to DuckDB SQL, docs/dunesql.md) or duckdb (DuckDB's own SQL, as written); a team's sql_dialect overrides it"),
    dune_sample_transactions: nonNegInt()
      .default(10_000)
      .describe('Transactions of the Dune-shaped sample tables loaded with the sample dataset (ethereum.transactions, ethereum.logs, erc20_ethereum.evt_Transfer, tokens.erc20, prices.usd); transfers and logs are about six in ten of them, prices one per token per minute of their span'),
    engine: EngineSchema.prefault({}).describe("The query engine's memory, temporary disk and threads"),
    public_url: z
      .string()
      .refine(isOrigin, { error: (issue) => `expected an origin such as https://sluice.example.com:8443 (http or https, no path, query or credentials), got ${JSON.stringify(issue.input)}` })
      .optional()
      .describe(
        "The origin clients reach the service at (e.g. https://sluice.example.com behind a proxy): next_uri is built on it. Unset: the address the service is bound to (127.0.0.1 for 0.0.0.0, [::1] for ::). Never taken from a request's Host header, so a link never sends a key where a request said",
      ),
  })
  .superRefine((s, ctx) => {
    const teams = new Set<string>();
    const keys = new Set<string>();
    s.teams.forEach((team, i) => {
      if (teams.has(team.name)) ctx.addIssue({ code: 'custom', path: ['teams', i, 'name'], message: `duplicate team name "${team.name}"` });
      teams.add(team.name);
      team.keys.forEach((k, j) => {
        if (keys.has(k.key)) ctx.addIssue({ code: 'custom', path: ['teams', i, 'keys', j, 'key'], message: 'duplicate API key (keys identify one team)' });
        keys.add(k.key);
      });
    });
  });

/** An http(s) origin: scheme, host and optional port, nothing else (a trailing '/' is accepted). */
function isOrigin(text: string): boolean {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return false;
  }
  return (url.protocol === 'http:' || url.protocol === 'https:') && url.username === '' && url.password === '' && url.pathname === '/' && url.search === '' && url.hash === '' && !text.endsWith('?') && !text.endsWith('#');
}

export type ServiceSettings = z.infer<typeof ServiceSettingsSchema>;
export type ServiceSettingsInput = z.input<typeof ServiceSettingsSchema>;
export type Tier = z.infer<typeof TierSchema>;
export type FaultSettings = z.infer<typeof FaultsSchema>;
export type EngineSettings = z.infer<typeof EngineSchema>;
export type FaultSettingsInput = z.input<typeof FaultsSchema>;

/** A settings file that cannot be read, parsed, interpolated or validated; the message names the file and the path. */
export class SettingsError extends ConfigError {
  override readonly code = 'SETTINGS_INVALID';
}

/** `teams[0].keys[1].scopes[0]`: the path a YAML author can find. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out === '' ? String(p) : `.${String(p)}`;
  return out === '' ? '(root)' : out;
}

export function formatZodIssues(error: z.ZodError): string {
  return error.issues.map((i) => `${formatPath(i.path)}: ${i.message}`).join('; ');
}

export function parseSettings(input: unknown, source = 'settings'): ServiceSettings {
  const parsed = ServiceSettingsSchema.safeParse(input);
  if (!parsed.success) throw new SettingsError(`${source}: ${formatZodIssues(parsed.error)}`);
  return parsed.data;
}

/**
 * Loads a YAML settings file. `${VAR}` and `${VAR:-default}` in its values are replaced from
 * `env` first (the job files' rules, src/config/interpolate.ts; `$${` is a literal `${`), so a
 * settings file in a repository can take its API keys from the environment.
 */
export async function loadSettingsFile(path: string, env: Env = process.env): Promise<ServiceSettings> {
  return parseSettings(await readSettingsFile(path, env), path);
}

/**
 * A settings file read over `base` (`mergeSettings`): it need only name what it changes.
 * `ownTeams` when it names its teams, which then replace the base's.
 */
export async function loadSettingsOver(path: string, base: object, env: Env = process.env): Promise<{ settings: ServiceSettings; ownTeams: boolean }> {
  const fields = await readSettingsFile(path, env);
  return { settings: parseSettings(mergeSettings(base, fields), path), ownTeams: fields.teams !== undefined };
}

/** A settings file's fields as written, `${VAR}` replaced, not yet checked against the schema. */
export async function readSettingsFile(path: string, env: Env = process.env): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (cause) {
    throw new SettingsError(`${path}: cannot read the settings file (${(cause as Error).message})`, { cause });
  }
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: true });
  const yamlError = doc.errors[0];
  if (yamlError !== undefined) throw new SettingsError(`${path}: not valid YAML (${yamlError.message})`, { cause: yamlError });
  const issues = interpolateDocument(doc, env, lineCounter);
  if (issues.length > 0) {
    throw new SettingsError(issues.map((i) => `${path}${i.line === undefined ? '' : `:${i.line}:${i.col ?? 1}`} ${i.path}: ${i.message}`).join('; '));
  }
  const fields: unknown = doc.toJS();
  if (fields === null || fields === undefined) return {};
  if (!isPlainObject(fields)) throw new SettingsError(`${path}: expected settings fields (teams, limits, engine, ...), got ${Array.isArray(fields) ? 'a list' : JSON.stringify(fields)}`);
  return fields;
}

/**
 * `over` read over `base`: a field `over` gives replaces the base's, except that two objects
 * (limits, engine, tiers, faults, a tier) are merged field by field; lists (teams, keys,
 * datasets) are replaced whole. So a file that names only `engine.memory_limit` keeps every
 * other setting of the base, teams and keys included.
 */
export function mergeSettings(base: object, over: Record<string, unknown>): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...base };
  for (const [name, value] of Object.entries(over)) {
    const under = merged[name];
    merged[name] = isPlainObject(under) && isPlainObject(value) ? mergeSettings(under, value) : value;
  }
  return merged;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Settings when none are given: team `demo` with one Admin key, taken from SERVICE_API_KEY or
 * generated (then `generatedKey` is set, so `sluice serve` can print it once).
 */
export function defaultSettings(env: NodeJS.ProcessEnv = process.env): { settings: ServiceSettings; generatedKey?: string } {
  const fromEnv = env.SERVICE_API_KEY;
  const key = fromEnv !== undefined && fromEnv !== '' ? fromEnv : `sk_${randomBytes(18).toString('base64url')}`;
  const settings = parseSettings({ teams: [{ name: 'demo', keys: [{ key, scopes: ['Admin'] }] }] }, 'default settings (SERVICE_API_KEY)');
  return fromEnv ? { settings } : { settings, generatedKey: key };
}

const TIER_DEFAULTS = {
  small: { threads: 1, cost_factor: 0.5, memory_limit_bytes: GiB / 2, temp_limit_bytes: 2 * GiB },
  medium: { threads: 1, cost_factor: 1, memory_limit_bytes: GiB, temp_limit_bytes: 4 * GiB },
  large: { threads: 2, cost_factor: 2, memory_limit_bytes: 2 * GiB, temp_limit_bytes: 8 * GiB },
} as const;

/** The tier a request runs at: the one it names, else its team plan's. */
export function requestTier(settings: ServiceSettings, team: string, asked: Performance | undefined): Performance {
  return asked ?? settings.teams.find((t) => t.name === team)?.plan.performance ?? 'medium';
}

/** A tier with every field resolved. */
export function resolveTier(settings: ServiceSettings, performance: Performance): Tier {
  const tier = performance === 'free' ? 'small' : performance;
  const given = settings.tiers[tier];
  const dflt = TIER_DEFAULTS[tier];
  return {
    threads: given.threads ?? dflt.threads,
    cost_factor: given.cost_factor ?? dflt.cost_factor,
    memory_limit_bytes: given.memory_limit_bytes ?? dflt.memory_limit_bytes,
    temp_limit_bytes: given.temp_limit_bytes ?? dflt.temp_limit_bytes,
    timeout_ms: given.timeout_ms ?? settings.limits.execution_timeout_ms,
  };
}
