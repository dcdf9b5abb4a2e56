// `npm run docs`: writes the pages of docs/ that are generated from the code: the job file
// reference (docs/jobs.md) from the job file schema with the built-in formats and sinks, the
// service settings reference (docs/service-settings.md) from the settings schema, and the job
// files' JSON Schema (sluice.schema.json, what `sluice schema` prints, which the examples' editor
// comment names), and the DuneSQL conformance page (docs/dunesql.md) from a run of its cases. A test
// (test/docsGenerated.test.ts) fails while a page on disk is not what this writes.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { builtins } from '../connectors/index.ts';
import { jobFileJsonSchema } from '../src/config/jsonSchema.ts';
import { jobFileReference, serviceSettingsReference } from '../src/config/reference.ts';
import { splitRuleReference } from '../src/jobs/output/splitRule.ts';
import { ServiceSettingsSchema } from '../src/service/settings.ts';
import { z } from 'zod';
import { writeConformancePage } from './dunesqlConformance.ts';

/** Each generated page: its path under the repository and its text. */
export function generatedPages(): { path: string; text: string }[] {
  return [
    { path: 'docs/jobs.md', text: `${jobFileReference(jobFileJsonSchema(builtins))}\n${splitRuleReference()}` },
    { path: 'sluice.schema.json', text: `${JSON.stringify(jobFileJsonSchema(builtins), null, 2)}\n` },
    { path: 'docs/service-settings.md', text: serviceSettingsReference(z.toJSONSchema(ServiceSettingsSchema, { io: 'input', unrepresentable: 'any' })) },
  ];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const page of generatedPages()) {
    writeFileSync(fileURLToPath(new URL(`../${page.path}`, import.meta.url)), page.text);
    console.log(`wrote ${page.path}`);
  }
  // Runs the DuneSQL conformance cases through a local service (about a minute).
  await writeConformancePage();
  console.log('wrote docs/dunesql.md');
}
