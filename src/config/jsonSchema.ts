import { z } from 'zod';
import { JobFileSchema } from './jobSchema.ts';

/** The JSON Schema of job files, for editors (`sluice schema > sluice.schema.json`). */
export function jobFileJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(JobFileSchema, { io: 'input', unrepresentable: 'any' });
  return { ...schema, $id: 'https://sluice.dev/schema/jobs.json', title: 'sluice job file' };
}
