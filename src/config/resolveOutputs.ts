import { ConfigError, type Registry } from '../kit/index.ts';
import { resolveOutput, type ResolvedOutput } from '../export/outputConfig.ts';
import { show } from './describeIssues.ts';
import type { JobFileIssue } from './errors.ts';
import { formatPath, type Position } from './yamlPath.ts';

/**
 * Resolves every output of every job against the registry: the format and its options, the sink
 * that takes the path and its options block, the rules between them (a block for another sink, a
 * single-stream sink with partitions). What the schema alone cannot see is found here, at load,
 * before anything is run or paid for; each problem located at its place in the file.
 */
export function resolveOutputs<J extends { readonly outputs: readonly unknown[] }>(
  jobs: readonly J[],
  /** The same jobs as written (before the schema filled in defaults), so messages echo what the user wrote. */
  written: readonly { readonly outputs: readonly unknown[] }[],
  registry: Registry,
  positionOf: (path: readonly PropertyKey[]) => Position | undefined,
): { jobs: (Omit<J, 'outputs'> & { readonly outputs: readonly ResolvedOutput[] })[]; issues: JobFileIssue[] } {
  const issues: JobFileIssue[] = [];
  const resolved = jobs.map((job, i) => ({
    ...job,
    outputs: job.outputs.map((_, j) => {
      try {
        return withRunFields(written[i]!.outputs[j], job.outputs[j], (config) => resolveOutput(config, registry));
      } catch (error) {
        if (!(error instanceof ConfigError)) throw error;
        for (const issue of error.issues) {
          const path = ['jobs', i, 'outputs', j, ...splitPath(issue.path)];
          const pos = positionOf(path);
          // The ConfigError redacted the values already: a credential is never echoed.
          issues.push({ path: formatPath(path), line: pos?.line, col: pos?.col, message: issue.value === undefined ? issue.message : `${issue.message}, got ${show(issue.value)}` });
        }
        return undefined as unknown as ResolvedOutput;
      }
    }),
  }));
  return { jobs: resolved, issues };
}

/**
 * An output's `schema_drift` and `expect` are the run's business, not the export's: resolved
 * without them, then carried beside it (the contract as the schema parsed it, `parsed`).
 */
function withRunFields(config: unknown, parsed: unknown, resolve: (config: unknown) => ResolvedOutput): ResolvedOutput {
  if (typeof config !== 'object' || config === null || Array.isArray(config) || !('schema_drift' in config || 'expect' in config)) return resolve(config);
  const { schema_drift: schemaDrift, expect, ...rest } = config as Record<string, unknown>;
  const contract = (parsed as { expect?: unknown } | undefined)?.expect ?? expect;
  return { ...resolve(rest), ...(schemaDrift === undefined ? {} : { schemaDrift }), ...(expect === undefined ? {} : { expect: contract }) } as ResolvedOutput;
}

/** `s3.secret_access_key` -> ['s3', 'secret_access_key']; `partition_by[1]` -> ['partition_by', 1]. */
function splitPath(path: string): PropertyKey[] {
  const out: PropertyKey[] = [];
  for (const [, key, index] of path.matchAll(/([^.[\]]+)|\[(\d+)\]/g)) out.push(index === undefined ? key! : Number(index));
  return out;
}
