import type { z } from 'zod';
import { outputConfigSchema } from '../export/index.ts';

/**
 * The output section is defined by src/export (one variant per format, each with its own
 * `format_options`); job files embed it unchanged so both validate the same way.
 */
export const OutputConfigSchema = outputConfigSchema().describe('One output: format, destination path (directory or s3://), partitioning and rolling');
export type OutputConfig = z.infer<typeof OutputConfigSchema>;
