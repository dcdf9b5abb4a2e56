import { z } from 'zod';
import { parseS3Url } from './url.ts';

// The S3 sink's settings, apart from its implementation: validating a job file loads this file
// and zod, never the AWS SDK.

const STORAGE_CLASSES = [
  'STANDARD',
  'REDUCED_REDUNDANCY',
  'STANDARD_IA',
  'ONEZONE_IA',
  'INTELLIGENT_TIERING',
  'GLACIER',
  'DEEP_ARCHIVE',
  'GLACIER_IR',
  'EXPRESS_ONEZONE',
] as const;

/** S3 settings other than the URL; the export's `s3:` block. */
export const s3Options = z.strictObject({
  region: z.string().min(1).optional().describe('AWS region; defaults to the standard chain (AWS_REGION, profile).'),
  endpoint: z.url().optional().describe('Custom endpoint for S3-compatible stores (MinIO, a local server).'),
  force_path_style: z.boolean().default(false).describe('Address buckets as https://host/bucket instead of https://bucket.host.'),
  sse: z.enum(['AES256', 'aws:kms', 'aws:kms:dsse']).optional().describe('Server-side encryption for every object written.'),
  sse_kms_key_id: z.string().min(1).optional().describe('KMS key id or ARN when sse is aws:kms.'),
  storage_class: z.enum(STORAGE_CLASSES).optional().describe('Storage class for every object written.'),
  profile: z.string().min(1).optional().describe('Named profile from ~/.aws/config; otherwise the standard credential chain.'),
  access_key_id: z.string().min(1).optional().describe('Static credentials; usually leave unset and use the standard chain.'),
  secret_access_key: z.string().min(1).optional().describe('Secret for access_key_id.'),
  session_token: z.string().min(1).optional().describe('Session token for temporary static credentials.'),
  part_size_mb: z.int().min(5).max(5120).default(8).describe('Multipart upload part size in MiB (S3 minimum is 5).'),
  queue_size: z.int().min(1).max(32).default(4).describe('Parts uploaded concurrently per object.'),
});

export const s3Config = s3Options
  .extend({
    url: z
      .string()
      .superRefine((url, ctx) => {
        const problem = s3UrlProblem(url);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      })
      .describe('Where the export lives: s3://bucket/prefix.'),
  })
  .refine((c) => (c.access_key_id === undefined) === (c.secret_access_key === undefined), {
    message: 'access_key_id and secret_access_key go together: give both or neither',
    path: ['secret_access_key'],
  })
  .refine((c) => c.sse_kms_key_id === undefined || c.sse?.startsWith('aws:kms') === true, {
    message: 'sse_kms_key_id needs sse: aws:kms or aws:kms:dsse',
    path: ['sse_kms_key_id'],
  });
export type S3Config = z.output<typeof s3Config>;

/** Why `url` is not an S3 location the sink can write, or undefined. */
function s3UrlProblem(url: string): string | undefined {
  if (!url.startsWith('s3://')) return 'expected s3://bucket/prefix (the scheme in lowercase, then two slashes)';
  if (parseS3Url(url) === undefined) return 'expected s3://bucket/prefix with a valid bucket name (3-63 lowercase letters, digits, dots, hyphens) and no . or .. segments';
  return undefined;
}
