import { defineCommand } from '../command.ts';
import { EXIT } from '../exit-codes.ts';
import { builtins } from '../../../connectors/index.ts';
import { loadJobFile } from '../../config/loadJobFile.ts';
import { writeOut } from '../io.ts';

export const validateCommand = defineCommand({
  name: 'validate',
  summary: 'Check job files without running them (schema, ${VAR} interpolation, cron, output options)',
  args: 'FILE...',
  minArgs: 1,
  maxArgs: Number.POSITIVE_INFINITY,
  details: 'Nothing is contacted: no service, no S3. Problems are printed as FILE:LINE:COL PATH: MESSAGE.',
  async run({ io, positionals }) {
    let failed = false;
    for (const file of positionals) {
      // A file that does not load is reported and the next one still checked.
      try {
        const jobFile = await loadJobFile(file, { registry: builtins, env: io.env });
        await writeOut(io.stdout, `${file}: ok (${jobFile.jobs.length} job${jobFile.jobs.length === 1 ? '' : 's'}: ${jobFile.jobs.map((j) => j.name).join(', ')})\n`);
      } catch (error) {
        failed = true;
        io.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
      }
    }
    return failed ? EXIT.config : EXIT.ok;
  },
});
