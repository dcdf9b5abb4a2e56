import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { LineCounter, parseDocument } from 'yaml';
import { describeIssues } from './describeIssues.ts';
import { JobFileError, type JobFileIssue } from './errors.ts';
import { interpolateDocument, type Env } from './interpolate.ts';
import type { Registry } from '../kit/index.ts';
import { DEFAULT_STATE_DIR, jobFileSchema, type JobFile } from './jobSchema.ts';
import { resolveOutputs } from './resolveOutputs.ts';
import { recordSqlOrigins } from './sqlOrigin.ts';
import { positionOf } from './yamlPath.ts';

export interface ParseOptions {
  /** Name used in messages (`jobs.yaml:12:7 ...`). */
  readonly file: string;
  /** The formats and sinks outputs may use (the CLI: the built-in connectors). */
  readonly registry: Registry;
  /** Variables for `${VAR}`; defaults to process.env. */
  readonly env?: Env;
  /**
   * The folder sluice runs in. Given, every relative path the file names (state_dir, local output
   * paths, the embedded service's data_dir and settings) is resolved against it, state_dir gets its
   * default there, and `${SLUICE_JOB_DIR}` is the folder of `file` (read from it). Absent: paths
   * stay as written.
   */
  readonly cwd?: string;
  /** Given, the name of every variable the `${VAR}` interpolation read is added to it (their values are treated as secrets by the MCP server). */
  readonly variablesRead?: Set<string>;
}

/** The variable that anchors a path to the job file's folder, whatever folder sluice runs in. */
export const JOB_DIR_VARIABLE = 'SLUICE_JOB_DIR';

/**
 * Pure: YAML text -> a validated job file with every output resolved. Order matters: YAML syntax,
 * then `${VAR}` interpolation (so a variable can hold a number or a cron expression), then the
 * strict schema and the outputs against the registry (which sink takes the path, its options),
 * whose problems are reported together: every output the schema found no fault in is resolved
 * even when another part of the file has one. A syntax or interpolation problem stops there.
 */
export function parseJobFile(text: string, options: ParseOptions): JobFile {
  const { file } = options;
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const issues: JobFileIssue[] = doc.errors.map((e) => {
      const pos = lineCounter.linePos(e.pos[0]);
      return { path: '', line: pos.line, col: pos.col, message: `YAML syntax: ${e.message.split('\n')[0]}` };
    });
    throw new JobFileError(file, issues);
  }
  const env = options.cwd === undefined ? (options.env ?? process.env) : { ...(options.env ?? process.env), [JOB_DIR_VARIABLE]: dirname(resolve(options.cwd, file)) };
  const read = options.variablesRead;
  const watched =
    read === undefined
      ? env
      : new Proxy(env, {
          get: (target, name) => {
            if (typeof name === 'string') read.add(name);
            return Reflect.get(target, name) as unknown;
          },
        });
  const envIssues = interpolateDocument(doc, watched, lineCounter);
  if (envIssues.length > 0) throw new JobFileError(file, envIssues);

  const data: unknown = doc.toJS({ maxAliasCount: 100 });
  if (data === null || data === undefined) throw new JobFileError(file, [{ path: '', line: 1, col: 1, message: 'the file is empty (expected a mapping with `jobs:`)' }]);
  const schema = jobFileSchema(options.registry);
  const result = schema.safeParse(data);
  const written = options.cwd === undefined ? writtenOutputs(data) : localPathsResolved(writtenOutputs(data), options.cwd);
  const at = (path: readonly PropertyKey[]) => positionOf(doc, lineCounter, path);
  if (!result.success) {
    const issues = describeIssues(result.error.issues, data, doc, lineCounter, schema);
    // An output the schema faulted is not resolved again (that would say the same thing twice).
    const outputOf = (path: string) => /^jobs\[\d+\]\.outputs\[\d+\]/.exec(path)?.[0];
    const faulted = new Set(issues.map((i) => outputOf(i.path)));
    const more = resolveOutputs(written, written, options.registry, at).issues.filter((i) => !faulted.has(outputOf(i.path)));
    throw new JobFileError(file, [...issues, ...more]);
  }
  const { jobs, issues } = resolveOutputs(result.data.jobs, written, options.registry, at);
  if (issues.length > 0) throw new JobFileError(file, issues);
  recordSqlOrigins(doc, lineCounter, text, file, jobs.map((job) => job.source));
  const parsed = { ...result.data, jobs };
  return options.cwd === undefined ? parsed : fileLevelPathsResolved(parsed, options.cwd);
}

/** A path with no URL scheme (and not `-`, standard output) is a local one. */
function isLocalPath(path: string): boolean {
  return path !== '-' && !/^[a-z][a-z0-9+.-]*:/i.test(path);
}

/** The outputs with their local paths made absolute against `cwd`, before the sinks see them. */
function localPathsResolved(jobs: { outputs: readonly unknown[] }[], cwd: string): { outputs: readonly unknown[] }[] {
  return jobs.map((job) => ({
    outputs: job.outputs.map((o) => {
      if (typeof o !== 'object' || o === null || !('path' in o) || typeof o.path !== 'string' || !isLocalPath(o.path)) return o;
      return { ...o, path: resolve(cwd, o.path) };
    }),
  }));
}

/** state_dir (its default too) and the embedded service's paths made absolute against `cwd`. */
function fileLevelPathsResolved(file: JobFile, cwd: string): JobFile {
  const embedded = file.connection?.embedded;
  return {
    ...file,
    state_dir: resolve(cwd, file.state_dir ?? DEFAULT_STATE_DIR),
    ...(file.connection === undefined
      ? {}
      : {
          connection: {
            ...file.connection,
            ...(embedded === undefined
              ? {}
              : {
                  embedded: {
                    ...embedded,
                    ...(embedded.data_dir === undefined ? {} : { data_dir: resolve(cwd, embedded.data_dir) }),
                    ...(embedded.settings === undefined ? {} : { settings: resolve(cwd, embedded.settings) }),
                  },
                }),
          },
        }),
  };
}

/** The outputs of each job as written, whatever the rest of the file holds (empty where none are readable). */
function writtenOutputs(data: unknown): { outputs: readonly unknown[] }[] {
  const jobs = typeof data === 'object' && data !== null && 'jobs' in data ? data.jobs : undefined;
  if (!Array.isArray(jobs)) return [];
  return jobs.map((job: unknown) => {
    const outputs = typeof job === 'object' && job !== null && 'outputs' in job ? job.outputs : undefined;
    return { outputs: Array.isArray(outputs) ? outputs : [] };
  });
}

/**
 * Reads and parses a job file; a file that cannot be read is a JobFileError too (exit code 2).
 * Relative paths (the file's own and those it names) are resolved against `cwd`, by default the
 * process's current folder: the one rule for every path of a job file.
 */
export async function loadJobFile(path: string, options: Omit<ParseOptions, 'file'>): Promise<JobFile> {
  const cwd = options.cwd ?? process.cwd();
  let text: string;
  try {
    text = await readFile(resolve(cwd, path), 'utf8');
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : error instanceof Error ? error.message : String(error);
    throw new JobFileError(path, [{ path: '', message: `cannot read the job file: ${reason}` }], { cause: error });
  }
  return parseJobFile(text, { ...options, cwd, file: path });
}
