import { defineCommand } from '../command.ts';
import { EXIT } from '../exitCodes.ts';
import { builtins } from '../../../connectors/index.ts';
import { loadJobFile } from '../../config/loadJobFile.ts';
import { writeOut } from '../io.ts';
import { commitTarget } from '../../export/commitFor.ts';
import { targetText } from '../../export/iceberg/catalog/catalogConfig.ts';
import { resolve } from 'node:path';
import { DEFAULT_EMBEDDED_DATA_DIR, type JobFile } from '../../config/jobSchema.ts';
import { embeddedSettingsFile } from '../../jobs/run/embeddedDefaults.ts';

export const validateCommand = defineCommand({
  name: 'validate',
  summary: 'Check job files without running them (schema, ${VAR} interpolation, cron, output options, the embedded service\'s settings file)',
  args: 'FILE...',
  minArgs: 1,
  maxArgs: Number.POSITIVE_INFINITY,
  details: [
    'Nothing is contacted: no service, no S3. Problems are printed as FILE:LINE:COL PATH: MESSAGE.',
    'A valid file is followed by the paths it names as sluice resolves them here: relative ones',
    'against the current folder, ${SLUICE_JOB_DIR} the job file\'s folder.',
  ].join('\n'),
  async run({ io, positionals }) {
    let failed = false;
    for (const file of positionals) {
      // A file that does not load is reported and the next one still checked.
      try {
        const jobFile = await loadJobFile(file, { registry: builtins, env: io.env, cwd: io.cwd });
        const settings = jobFile.connection?.base_url ? undefined : jobFile.connection?.embedded?.settings;
        if (settings !== undefined) await embeddedSettingsFile(resolve(io.cwd, settings), 'sk_validate_only', io.env);
        await writeOut(io.stdout, `${file}: ok (${jobFile.jobs.length} job${jobFile.jobs.length === 1 ? '' : 's'}: ${jobFile.jobs.map((j) => j.name).join(', ')})\n${resolvedPaths(jobFile, io.cwd)}`);
      } catch (error) {
        failed = true;
        io.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
      }
    }
    return failed ? EXIT.config : EXIT.ok;
  },
});

/** Where a run from here would keep its state and write: every path of the file, resolved. */
function resolvedPaths(jobFile: JobFile, cwd: string): string {
  const lines = [`  state_dir: ${jobFile.state_dir}`];
  const base = jobFile.connection?.base_url;
  if (base === undefined || base === '') lines.push(`  embedded service data: ${resolve(cwd, jobFile.connection?.embedded?.data_dir ?? DEFAULT_EMBEDDED_DATA_DIR)}`);
  const settings = jobFile.connection?.embedded?.settings;
  if (settings !== undefined) lines.push(`  embedded service settings: ${settings}`);
  for (const job of jobFile.jobs) {
    lines.push(`  ${job.name}: ${job.outputs.map((o) => `${o.path} (${o.format.type})`).join(', ')}`);
    for (const target of job.outputs.map((o) => commitTarget(o)).filter((t) => t !== undefined)) lines.push(`    commits to ${targetText(target)}`);
  }
  return `${lines.join('\n')}\n`;
}
