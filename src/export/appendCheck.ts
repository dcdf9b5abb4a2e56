import type { Schema } from 'apache-arrow';
import type { Commit } from './commit.ts';
import { AppendConflictError, SchemaDriftError } from './errors.ts';
import type { ResolvedOutput } from './outputConfig.ts';
import { partFileName } from './partFileName.ts';
import { parseType } from '../types/parse.ts';
import type { SqlType } from '../types/sqlType.ts';

/** Field metadata holding the service's type of a column (see `types/arrow.ts`). */
const SERVICE_TYPE = 'service.type';

const INTEGER_RANK: Partial<Record<SqlType['kind'], number>> = { tinyint: 1, smallint: 2, integer: 3, bigint: 4 };

/**
 * Whether every value of service type `from` is a value of `to`, with the same meaning, so rows of
 * `from` can be written as `to`, and files of both read as `to`: a smaller integer as a larger one,
 * real as double, a decimal as one of the same scale and more digits (the same 128-bit storage).
 */
export function widens(from: string, to: string): boolean {
  const a = parseType(from);
  const b = parseType(to);
  const ra = INTEGER_RANK[a.kind];
  const rb = INTEGER_RANK[b.kind];
  if (ra !== undefined && rb !== undefined) return ra < rb;
  if (a.kind === 'real' && b.kind === 'double') return true;
  if (a.kind === 'decimal' && b.kind === 'decimal') return a.scale === b.scale && a.precision < b.precision && b.precision <= 38;
  return false;
}

/**
 * Checks, before anything is written, that a result can be appended to the committed output at
 * `url`: written by the same job, in the same format and partitioning, with columns the output can
 * hold. A column whose type changed, or that the result no longer has, fails naming it; a new
 * column, or a wider type of a committed one (`widens`: integer to bigint, real to double, a
 * decimal with more digits), is accepted only when the format lets files of one output differ by
 * added columns (`FormatDescriptor.addsColumns`): readers that merge its files by name read the
 * wider type. Returns the columns the result adds, for the caller to report.
 */
export function checkAppend(url: string, previous: Commit, schema: Schema, resolved: ResolvedOutput, job: string | undefined, executionId: string): string[] {
  if ((previous.job ?? undefined) !== job) {
    const by = (name: string | undefined) => (name === undefined ? 'no job (a library call)' : `job ${JSON.stringify(name)}`);
    throw new AppendConflictError(url, `it was written by ${by(previous.job)}, not ${by(job)}; give each job its own path`);
  }
  const layout = previous.layout;
  if (layout !== undefined && layout.format !== resolved.format.type) {
    throw new AppendConflictError(url, `it holds ${layout.format} files, not ${resolved.format.type}; append with format: ${layout.format}, or write to another path`);
  }
  if (layout !== undefined && layout.partitionBy.join(',') !== resolved.partitionBy.join(',')) {
    const show = (cols: readonly string[]) => (cols.length === 0 ? 'no partition_by' : `partition_by [${cols.join(', ')}]`);
    throw new AppendConflictError(url, `it was written with ${show(layout.partitionBy)}, this output has ${show(resolved.partitionBy)}; keep the layout, or write to another path`);
  }
  // Part names carry the execution: its parts already listed means its rows are there already.
  const ours = partFileName(executionId, 0, '').slice('part-00000'.length);
  if (previous.files.some((f) => f.slice(f.lastIndexOf('/') + 1).includes(ours))) {
    throw new AppendConflictError(url, `it holds the rows of execution ${executionId} already (written with other options); appending them again would duplicate them: use mode: replace, or another path`);
  }
  const committed = previous.columns;
  if (committed === undefined) return [];
  // The result's columns, as the commit records them (partition columns included, wherever they are stored).
  const now = new Map(schema.fields.map((f) => [f.name, f.metadata.get(SERVICE_TYPE) ?? String(f.type)]));
  for (const column of committed) {
    const type = now.get(column.name);
    if (type === undefined) {
      throw new SchemaDriftError(url, column.name, `(${column.type}) is not in this result; bring it back (NULL AS ${column.name} keeps the type), or use mode: replace or another path`);
    }
    if (type !== column.type) {
      if (widens(column.type, type) && resolved.format.addsColumns === true) continue;
      throw new SchemaDriftError(url, column.name, `was ${column.type} in the committed output and is ${type} in this result; cast it back to ${column.type} in the query, or use mode: replace (rewrites the output) or another path`);
    }
  }
  const known = new Set(committed.map((c) => c.name));
  const added = [...now.keys()].filter((name) => !known.has(name));
  if (added.length > 0 && resolved.format.addsColumns !== true) {
    throw new SchemaDriftError(
      url,
      added[0]!,
      `(${now.get(added[0]!)}) is new, and ${resolved.format.type} files of one output must all have the same columns; drop it from the query, or use mode: replace, or parquet or ndjson (whose readers merge files by column name)`,
    );
  }
  if (resolved.format.addsColumns !== true) {
    const order = [...now.keys()];
    const at = committed.findIndex((c, i) => order[i] !== c.name);
    if (at !== -1) {
      throw new SchemaDriftError(url, order[at]!, `is column ${at + 1} of this result but ${committed[at]!.name} is column ${at + 1} of the committed ${resolved.format.type} files; select the columns in the committed order (${committed.map((c) => c.name).join(', ')})`);
    }
  }
  return added;
}
