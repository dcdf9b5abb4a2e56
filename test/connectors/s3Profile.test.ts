// An s3 block's `profile` is that profile's credentials, even when the environment also holds
// static keys: the SDK's default chain would consult both and print a warning on the console.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { clientConfig } from '../../connectors/sinks/s3/index.ts';
import { s3Config } from '../../connectors/sinks/s3/options.ts';

const VARS = ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_PROFILE', 'AWS_CONFIG_FILE', 'AWS_SHARED_CREDENTIALS_FILE'] as const;
let saved: Record<string, string | undefined>;
let dir: string;

beforeEach(async () => {
  saved = Object.fromEntries(VARS.map((k) => [k, process.env[k]]));
  dir = await mkdtemp(join(tmpdir(), 'sluice-s3-profile-'));
  await writeFile(join(dir, 'credentials'), '[lake]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = profile-secret\n');
  await writeFile(join(dir, 'config'), '');
  process.env.AWS_SHARED_CREDENTIALS_FILE = join(dir, 'credentials');
  process.env.AWS_CONFIG_FILE = join(dir, 'config');
  process.env.AWS_ACCESS_KEY_ID = 'AKIDENVIRONMENT';
  process.env.AWS_SECRET_ACCESS_KEY = 'environment-secret';
  delete process.env.AWS_SESSION_TOKEN;
  delete process.env.AWS_PROFILE;
});
afterEach(async () => {
  for (const k of VARS) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
  vi.restoreAllMocks();
  await rm(dir, { recursive: true, force: true });
});

describe('s3 profile credentials', () => {
  it('resolves the named profile, not the environment keys, and prints nothing', async () => {
    const warn = vi.spyOn(console, 'warn');
    const config = clientConfig(s3Config.parse({ url: 's3://lake/events', profile: 'lake', region: 'eu-west-1' }));
    expect(typeof config.credentials).toBe('function');
    const resolve = config.credentials as () => Promise<{ accessKeyId: string; secretAccessKey: string }>;
    expect(await resolve()).toMatchObject({ accessKeyId: 'AKIDPROFILE', secretAccessKey: 'profile-secret' });
    expect(warn).not.toHaveBeenCalled();
  });

  it('a profile that does not exist fails when the credentials are first needed, naming it', async () => {
    const config = clientConfig(s3Config.parse({ url: 's3://lake/events', profile: 'no-such-profile', region: 'eu-west-1' }));
    await expect((config.credentials as () => Promise<unknown>)()).rejects.toThrow(/no-such-profile/);
  });

  it('without a profile the standard chain is left to the SDK', () => {
    expect(clientConfig(s3Config.parse({ url: 's3://lake/events', region: 'eu-west-1' })).credentials).toBeUndefined();
  });
});
