import { ConfigError } from '../errors.ts';

// Errors of job files. The CLI maps JobFileError to exit code 2 (configuration error).

/** One problem in a job file, located by YAML path and by line and column (both 1-based). */
export interface JobFileIssue {
  /** `jobs[0].outputs[0].format`; empty for the document root. */
  readonly path: string;
  readonly line?: number;
  readonly col?: number;
  readonly message: string;
}

export class JobFileError extends ConfigError {
  override readonly code = 'JOB_FILE_INVALID';
  readonly file: string;
  override readonly issues: readonly JobFileIssue[];

  constructor(file: string, issues: readonly JobFileIssue[], options?: { cause?: unknown }) {
    super(issues.map((issue) => formatIssue(file, issue)).join('\n'), options?.cause === undefined ? {} : { cause: options.cause });
    this.file = file;
    this.issues = issues;
  }
}

/** `jobs.yaml:12:7 jobs[0].outputs[0].format: expected one of parquet|csv, got "parqet"` */
export function formatIssue(file: string, issue: JobFileIssue): string {
  const where = issue.line === undefined ? file : `${file}:${issue.line}:${issue.col ?? 1}`;
  return issue.path === '' ? `${where} ${issue.message}` : `${where} ${issue.path}: ${issue.message}`;
}
