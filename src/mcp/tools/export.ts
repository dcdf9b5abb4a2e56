import { z } from 'zod';
import type { Job } from '../../config/jobSchema.ts';
import { ConfigError } from '../../errors.ts';
import { resolveOutput, type ResolvedOutput } from '../../export/outputConfig.ts';
import { runJob, type JobSummary } from '../../jobs/run/runJob.ts';
import type { Registry } from '../../kit/index.ts';
import { ToolRefusedError } from '../budget.ts';
import { runCharged } from '../ownedExecution.ts';
import type { ToolCall } from '../context.ts';
import { checkSource, jobSourceOf, planSource, planView, rememberSql, SOURCE_ARGS } from '../source.ts';
import { BudgetShape, JOB_RESULT_SHAPE, PlanShape } from './shapes.ts';
import { defineTool, type ToolSpec } from './tool.ts';
import { jobResult, runEvents } from './runJob.ts';

/** The job name exports run under: their run history records, their lock, their outputs' manifests. */
export const EXPORT_JOB = 'mcp-export';

/**
 * The output argument: the fields of a job file's output most exports need, each described; the
 * whole output is then checked as a job file's is (every format and sink option, by resolveOutput).
 */
function outputArg(registry: Registry) {
  const blocks = Object.fromEntries(
    registry.sinks.flatMap((sink) => (sink.options ? [[sink.options.key, z.record(z.string(), z.unknown()).optional().describe(`${sink.description} Only with ${sink.paths}.`)]] : [])),
  );
  const formats = registry.formats.map((f) => f.type) as [string, ...string[]];
  return z
    .strictObject({
      path: z.string().min(1).describe(`Where the export lives: ${registry.sinks.filter((s) => s.type !== 'stdout').map((s) => s.paths).join('; ')}. Must be inside a location the server allows.`),
      format: z.enum(formats).optional().describe('File format (default parquet)'),
      format_options: z.record(z.string(), z.unknown()).optional().describe('Options of the format, as in a job file (e.g. parquet: { compression: zstd })'),
      partition_by: z.array(z.string().min(1)).min(1).optional().describe('Hive partitioning: one directory level col=value per column'),
      keep_partition_columns: z.boolean().optional(),
      max_rows_per_file: z.int().min(1).optional(),
      max_bytes_per_file: z.int().min(1024).optional(),
      table: z.enum(['manifest', 'iceberg']).optional().describe('manifest (default): files + _manifest.json + _SUCCESS; iceberg: an Apache Iceberg table (parquet), a snapshot per export'),
      mode: z.enum(['replace', 'append']).optional().describe('replace (default) or append to what the output holds'),
      ...blocks,
    })
    .describe('One output, as a job file writes it under outputs:');
}

export function exportTool(registry: Registry): ToolSpec {
  return defineTool({
    name: 'export',
    title: 'Export a full result to a file or table',
    description: [
      'Lands a full result in an output (a local directory, s3://bucket/prefix; Parquet, Arrow, CSV or NDJSON files, or an Iceberg table), atomically, and returns only the summary (rows, files, bytes, credits, where): never the rows.',
      'Pass the execution_id a preview returned to export that result at no further cost; sql or query_id execute anew (credits, see plan).',
      'The path must be inside a location the server allows; a re-export of the same execution to the same output writes nothing again.',
    ].join(' '),
    input: { ...SOURCE_ARGS, output: outputArg(registry) },
    output: {
      ...JOB_RESULT_SHAPE,
      plan: PlanShape,
      budget: BudgetShape,
    },
    writes: true,
    readOnly: false,
    async run(args, call) {
      const { output: outputInput, ...source } = args;
      checkSource(source);
      // Free checks first: a destination that cannot be used costs nothing.
      const output = allowedOutput(outputInput, registry, call);
      const plan = await planSource(source, call);
      const settle = call.session.budget.reserve(plan.credits, { ...planView(plan), output: output.sinkConfig });
      const job: Job = { name: EXPORT_JOB, source: jobSourceOf(source), ...(source.performance ? { performance: source.performance } : {}), outputs: [output] };
      let owned = false;
      const summary: JobSummary = await runCharged(plan, call, settle, (started) => {
        owned = started.owned;
        call.facts.recordedByRun = true;
        const stream = started.plan.stream;
        return call.server.serialExport(() =>
          runJob(job, {
            client: call.server.client,
            stateDir: call.server.stateDir,
            signal: call.signal,
            ...('executionId' in stream ? { executionId: stream.executionId } : {}),
            resume: false,
            origin: 'mcp',
            events: runEvents(call),
          }),
        );
      });
      const charged = call.facts.credits;
      if (owned) rememberSql(source, summary.executionId, call);
      return { ...jobResult({ ...summary, credits: charged, startedExecution: owned || summary.startedExecution }, call), plan: planView(plan), budget: call.session.budget.view() };
    },
  }) as unknown as ToolSpec;
}

/** The output resolved as a job file's, at an absolute path the allowlist admits, or a refusal naming the field. */
function allowedOutput(input: Record<string, unknown>, registry: Registry, call: ToolCall): ResolvedOutput {
  const path = typeof input.path === 'string' ? input.path : '';
  const verdict = call.server.settings.allowlist.check(path, call.server.cwd);
  if (!verdict.allowed) throw new ToolRefusedError('OUTPUT_NOT_ALLOWED', `refused: ${verdict.reason}; nothing was executed or written`, { allowed: call.server.settings.allowlist.entries });
  try {
    return resolveOutput({ format: 'parquet', ...input, path: verdict.path }, registry);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    const issues = error.issues.map((i) => `output.${i.path}: ${i.message}${i.value === undefined ? '' : `, got ${JSON.stringify(i.value)}`}`);
    throw new ToolRefusedError('INVALID_OUTPUT', issues.length > 0 ? issues.join('; ') : error.message);
  }
}
