import { readFile } from 'node:fs/promises';
import { LineCounter, parseDocument } from 'yaml';
import { describeIssues } from './describeIssues.ts';
import { JobFileError, type JobFileIssue } from './errors.ts';
import { interpolateDocument, type Env } from './interpolate.ts';
import type { Registry } from '../kit/index.ts';
import { jobFileSchema, type JobFile } from './jobSchema.ts';
import { resolveOutputs } from './resolveOutputs.ts';
import { positionOf } from './yamlPath.ts';

export interface ParseOptions {
  /** Name used in messages (`jobs.yaml:12:7 ...`). */
  readonly file: string;
  /** The formats and sinks outputs may use (the CLI: the built-in connectors). */
  readonly registry: Registry;
  /** Variables for `${VAR}`; defaults to process.env. */
  readonly env?: Env;
}

/**
 * Pure: YAML text -> a validated job file with every output resolved. Order matters: YAML syntax,
 * then `${VAR}` interpolation (so a variable can hold a number or a cron expression), then the
 * strict schema, then the outputs against the registry (which sink takes the path, its options).
 * Every problem found at one stage is reported together; later stages do not run.
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
  const envIssues = interpolateDocument(doc, options.env ?? process.env, lineCounter);
  if (envIssues.length > 0) throw new JobFileError(file, envIssues);

  const data: unknown = doc.toJS({ maxAliasCount: 100 });
  if (data === null || data === undefined) throw new JobFileError(file, [{ path: '', line: 1, col: 1, message: 'the file is empty (expected a mapping with `jobs:`)' }]);
  const schema = jobFileSchema(options.registry);
  const result = schema.safeParse(data);
  if (!result.success) throw new JobFileError(file, describeIssues(result.error.issues, data, doc, lineCounter, schema));
  const written = (data as { jobs: { outputs: unknown[] }[] }).jobs;
  const { jobs, issues } = resolveOutputs(result.data.jobs, written, options.registry, (path) => positionOf(doc, lineCounter, path));
  if (issues.length > 0) throw new JobFileError(file, issues);
  return { ...result.data, jobs };
}

/** Reads and parses a job file; a file that cannot be read is a JobFileError too (exit code 2). */
export async function loadJobFile(path: string, options: Omit<ParseOptions, 'file'>): Promise<JobFile> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : error instanceof Error ? error.message : String(error);
    throw new JobFileError(path, [{ path: '', message: `cannot read the job file: ${reason}` }], { cause: error });
  }
  return parseJobFile(text, { ...options, file: path });
}
