// `npm run dev:s3`: a local S3 with the bucket made, and the lines to export printed, until Ctrl-C.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { HeadBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { ROOT } from './sluiceProcess.ts';

describe('npm run dev:s3', () => {
  it('starts a local S3 with the bucket, prints what to export, and stops on SIGINT with exit 0', async () => {
    const child = spawn(process.execPath, [join(ROOT, 'scripts', 'devStore.ts'), 's3', '--port', '0', '--bucket', 'try-it'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const exported = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const line = /^ {2}export (.+)$/m.exec(out)?.[1];
        if (line !== undefined) resolve(line);
      });
      child.once('exit', (code) => reject(new Error(`exited ${code}: ${out}`)));
    });
    const env = Object.fromEntries(exported.split(' ').map((kv) => kv.split('=') as [string, string]));
    expect(env).toMatchObject({ S3_BUCKET: 'try-it', S3_PATH_STYLE: 'true', S3_ENDPOINT: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/) });
    expect(out).toContain('npx sluice run config/examples/s3.yaml');
    const client = new S3Client({ endpoint: env.S3_ENDPOINT, region: env.AWS_REGION!, forcePathStyle: true, credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID!, secretAccessKey: env.AWS_SECRET_ACCESS_KEY! } });
    try {
      expect((await client.send(new HeadBucketCommand({ Bucket: 'try-it' }))).$metadata.httpStatusCode).toBe(200);
    } finally {
      client.destroy();
    }
    const exit = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.kill('SIGINT');
    expect(await exit).toBe(0);
  });

  it('refuses an unknown store with exit 2 and says what it takes', async () => {
    const child = spawn(process.execPath, [join(ROOT, 'scripts', 'devStore.ts'), 'gcs'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    expect(await new Promise((resolve) => child.once('exit', resolve))).toBe(2);
    expect(err).toContain('expected s3 or azure, got "gcs"');
  });
});
