import { z } from 'zod';
import { parseGcsUrl } from './url.ts';

// The GCS sink's settings, apart from its implementation: validating a job file loads this file
// and zod, never google-auth-library.

/** Google Cloud Storage settings other than the URL; the export's `gcs:` block. Credentials usually come from the environment. */
export const gcsOptions = z.strictObject({
  endpoint: z.url().optional().describe('JSON API endpoint, for a private endpoint or a local stand-in; defaults to STORAGE_EMULATOR_HOST, then https://storage.googleapis.com.'),
  key_file: z.string().min(1).optional().describe('Path of a service account key (or other credentials) JSON file; usually leave unset and use application default credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud, workload identity).'),
  anonymous: z.boolean().default(false).describe('Send no credentials (a public bucket, a local stand-in); the default when STORAGE_EMULATOR_HOST is set and key_file is not.'),
  chunk_size_mb: z.int().min(1).max(1024).default(8).describe('Chunk size of a streamed (resumable) upload in MiB; one chunk per object is held in memory.'),
  user_project: z.string().min(1).optional().describe('Project billed for requests to a requester-pays bucket.'),
});

export const gcsConfig = gcsOptions
  .extend({
    url: z
      .string()
      .superRefine((url, ctx) => {
        if (parseGcsUrl(url) === undefined) {
          ctx.addIssue({ code: 'custom', message: 'expected gs://bucket/prefix (a bucket name of 3-63 lowercase letters, digits, hyphens, underscores and dots, not starting with goog; no . or .. segments)' });
        }
      })
      .describe('Where the export lives: gs://bucket/prefix.'),
  })
  .refine((c) => !(c.anonymous && c.key_file !== undefined), {
    message: 'anonymous and key_file are alternatives: give one of them, or neither and use application default credentials',
    path: ['anonymous'],
  });
export type GcsConfig = z.output<typeof gcsConfig>;
