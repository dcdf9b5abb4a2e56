import { z } from 'zod';
import type { Registry } from '../kit/index.ts';
import { jobFileSchema } from './jobSchema.ts';

/** The JSON Schema of job files, for editors (`sluice schema > sluice.schema.json`). */
export function jobFileJsonSchema(registry: Registry): Record<string, unknown> {
  const schema = z.toJSONSchema(jobFileSchema(registry), { io: 'input', unrepresentable: 'any' });
  return { ...schema, $id: 'https://sluice.dev/schema/jobs.json', title: 'sluice job file' };
}
