import { builtins } from '../../../connectors/index.ts';
import { jobFileJsonSchema } from '../../config/jsonSchema.ts';
import { defineCommand } from '../command.ts';
import { EXIT } from '../exitCodes.ts';
import { writeOut } from '../io.ts';

export const schemaCommand = defineCommand({
  name: 'schema',
  summary: 'Print the JSON Schema of job files (for editors: yaml-language-server)',
  details: 'Example: sluice schema > sluice.schema.json, then start a job file with\n  # yaml-language-server: $schema=./sluice.schema.json',
  async run({ io }) {
    await writeOut(io.stdout, `${JSON.stringify(jobFileJsonSchema(builtins), null, 2)}\n`);
    return EXIT.ok;
  },
});
