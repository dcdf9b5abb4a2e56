// One rule for every path a job file names (state_dir, local outputs, the embedded service's data
// folder and settings file): relative to the folder sluice runs in, as the command's own arguments
// are; `${SLUICE_JOB_DIR}` anchors a path to the job file's folder instead, whatever that is.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadJobFile, parseJobFile } from '../../src/config/index.ts';
import { builtins } from '../../connectors/index.ts';
import { startSluice, testEnv } from '../cli/sluiceProcess.ts';

const JOBS = `state_dir: ./state
connection:
  embedded: { data_dir: ./svc, settings: ../service.yaml }
jobs:
  - name: a
    source: { sql: select 1 }
    outputs:
      - { format: csv, path: ./out/a }
      - { format: csv, path: "\${SLUICE_JOB_DIR}/beside" }
      - { format: csv, path: s3://bucket/a }
      - { format: csv, path: "-" }
      - { format: csv, path: /abs/a }
`;

describe('paths in a job file', () => {
  it('resolve against the folder sluice runs in; ${SLUICE_JOB_DIR} is the job file\'s folder', () => {
    const file = parseJobFile(JOBS, { file: 'etc/jobs.yaml', registry: builtins, env: {}, cwd: '/srv/here' });
    expect(file.state_dir).toBe('/srv/here/state');
    expect(file.connection?.embedded).toMatchObject({ data_dir: '/srv/here/svc', settings: '/srv/service.yaml' });
    expect(file.jobs[0]!.outputs.map((o) => o.path)).toEqual(['/srv/here/out/a', '/srv/here/etc/beside', 's3://bucket/a', '-', '/abs/a']);
  });

  it('state_dir gets its default there too', () => {
    const file = parseJobFile('jobs:\n  - name: a\n    source: { sql: select 1 }\n    outputs: [{ format: csv, path: o }]\n', { file: 'jobs.yaml', registry: builtins, env: {}, cwd: '/w' });
    expect(file.state_dir).toBe('/w/.sluice/state');
    expect(file.jobs[0]!.outputs[0]!.path).toBe('/w/o');
  });

  it('loadJobFile resolves against the folder given, reading the file there', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sluice-paths-'));
    try {
      await mkdir(join(dir, 'etc'));
      await writeFile(join(dir, 'etc', 'jobs.yaml'), JOBS);
      const file = await loadJobFile('etc/jobs.yaml', { registry: builtins, env: {}, cwd: dir });
      expect(file.state_dir).toBe(join(dir, 'state'));
      expect(file.jobs[0]!.outputs[1]!.path).toBe(join(dir, 'etc', 'beside'));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('sluice validate shows the resolved paths', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sluice-paths-'));
    try {
      await mkdir(join(dir, 'etc'));
      // validate reads the settings file too: it must be where the job file's path says.
      await writeFile(join(dir, 'service.yaml'), 'teams: [{ name: demo, keys: [{ key: sk_paths_admin, scopes: [Admin] }] }]\n');
      await writeFile(join(dir, 'etc', 'jobs.yaml'), JOBS.replace('../service.yaml', './service.yaml'));
      const result = await startSluice(['validate', 'etc/jobs.yaml'], { cwd: dir, env: testEnv() }).done;
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toContain(`state_dir: ${join(dir, 'state')}`);
      expect(result.stdout).toContain(`embedded service data: ${join(dir, 'svc')}`);
      expect(result.stdout).toContain(`embedded service settings: ${join(dir, 'service.yaml')}`);
      expect(result.stdout).toContain(`a: ${join(dir, 'out', 'a')} (csv)`);
      expect(result.stdout).toContain(join(dir, 'etc', 'beside'));
      expect(result.stdout).toContain('s3://bucket/a');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('paths in --plan', () => {
  it('shows the state folder and the outputs as resolved from where sluice runs', { timeout: 120_000 }, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sluice-paths-'));
    try {
      await mkdir(join(dir, 'etc'));
      await writeFile(
        join(dir, 'etc', 'jobs.yaml'),
        'connection:\n  embedded: { data_dir: ./svc, sample_rows: 10 }\njobs:\n  - name: a\n    source: { sql: select 1 }\n    outputs: [{ format: csv, path: ./out/a }]\n',
      );
      const result = await startSluice(['run', 'etc/jobs.yaml', '--plan'], { cwd: dir, env: testEnv() }).done;
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toContain(`state_dir: ${join(dir, '.sluice', 'state')}`);
      expect(result.stdout).toContain(`  file://${join(dir, 'out', 'a')}  csv  write`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
