import { z } from 'zod';

// The job file's schema drift policy and notifications: kept beside jobSchema.ts, which takes them in.

export const DRIFT_POLICIES = ['evolve', 'freeze', 'fail'] as const;
export type DriftPolicy = (typeof DRIFT_POLICIES)[number];

export const SchemaDriftSchema = z
  .enum(DRIFT_POLICIES)
  .describe(
    "What a run does when the result's columns differ from what the output committed last (checked from the execution's column_types before any page is fetched): " +
      'evolve (the default, as before this setting existed): the output takes the new columns where its format and mode can hold them, and a change it cannot hold fails before any page; ' +
      'freeze: the output keeps its committed columns (new ones dropped, missing ones written as NULL, a changed type fails); ' +
      'fail: any difference fails the run before any page, naming each column and both types. See docs/running-jobs.md, Schema drift',
  );

export const NOTIFY_EVENTS = ['failure', 'drift', 'success'] as const;
export type NotifyEvent = (typeof NOTIFY_EVENTS)[number];

/** Below this a shared secret is guessable. */
export const MIN_SECRET_LENGTH = 16;

export const WebhookSchema = z
  .strictObject({
    url: z.url({ protocol: /^https?$/, error: 'expected an http:// or https:// URL, e.g. https://hooks.example.com/sluice' }).describe('Where each event is POSTed as JSON. Logs and errors show only its origin (a path may hold a token)'),
    secret: z
      .string()
      .min(MIN_SECRET_LENGTH, `at least ${MIN_SECRET_LENGTH} characters; give it from the environment, e.g. secret: \${SLUICE_WEBHOOK_SECRET}`)
      .optional()
      .describe('Signs each body: header Sluice-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" with this secret>. Write it as ${ENV_VAR}; it is redacted wherever the job is shown. Absent: no signature (receivers cannot tell a forged event)'),
    events: z
      .array(z.enum(NOTIFY_EVENTS))
      .min(1)
      .refine((events) => new Set(events).size === events.length, 'events must not repeat')
      .optional()
      .describe('Which events are sent (default [failure, drift]): failure (a run failed after its retries), drift (an output\'s schema drifted, whatever its schema_drift policy did), success (a run succeeded)'),
    retries: z.number().int().min(0).max(10).optional().describe('Times a delivery is tried again after a network error, a timeout, a 429 or a 5xx answer (default 3), waiting 1 s, 2 s, 4 s ... between tries. A receiver that stays down never fails the run: the failure is logged and counted'),
    timeout_seconds: z.number().positive().max(120).optional().describe('How long one delivery attempt may take (default 10)'),
  })
  .describe('A webhook: each event POSTed as JSON, signed, retried with backoff');
export type WebhookConfig = z.infer<typeof WebhookSchema>;

/**
 * What the schema of one field cannot see: a policy set on an output whose committed schema a run
 * cannot read before the fetch (an Iceberg table in a REST catalog: its metadata is the catalog's).
 */
export function driftIssues(job: { schema_drift?: DriftPolicy | undefined; outputs: readonly unknown[] }, ctx: z.RefinementCtx): void {
  job.outputs.forEach((output, i) => {
    const o = output as { schema_drift?: DriftPolicy; catalog?: { type?: unknown } };
    const policy = o.schema_drift ?? job.schema_drift;
    if (policy === undefined || policy === 'evolve' || o.catalog?.type !== 'rest') return;
    const path = o.schema_drift === undefined ? ['schema_drift'] : ['outputs', i, 'schema_drift'];
    ctx.addIssue({ code: 'custom', path, message: `${policy} is not supported yet for outputs[${i}], an Iceberg table in a REST catalog (its schema is read only at commit): use evolve there (a changed type fails at commit), or set schema_drift per output` });
  });
}

export const NotifySchema = z.strictObject({ webhook: WebhookSchema }).describe('Notifications of failures and schema drift');
export type NotifyConfig = z.infer<typeof NotifySchema>;
