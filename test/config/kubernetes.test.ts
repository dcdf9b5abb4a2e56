import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT, EXIT_CODE_DOCS } from '../../src/cli/exitCodes.ts';
import { ROOT, sluice } from '../cli/sluiceProcess.ts';
import { startPreconditionGate, type PreconditionGate } from '../helpers/preconditionGate.ts';
import { startLocalS3, type LocalS3 } from '../helpers/s3.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { duck } from '../jobs/duck.ts';

// config/kubernetes: no cluster here, so the manifests are checked for what matters (an Indexed Job
// with a per-index backoff and a failure policy by sluice's exit codes; an AWS Batch array job with
// the same command and exit rules), and the command they run is run for real, once per index, with
// the variables each launcher sets, against the local service and the local S3 server.

const DIR = join(ROOT, 'config/kubernetes');

interface Container {
  name: string;
  args: string[];
  env: { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
}

async function k8s() {
  const docs = parseAllDocuments(await readFile(join(DIR, 'indexed-job.yaml'), 'utf8')).map((d) => d.toJS() as Record<string, any>);
  const configMap = docs.find((d) => d.kind === 'ConfigMap')!;
  const job = docs.find((d) => d.kind === 'Job')!;
  return { configMap, job, container: job.spec.template.spec.containers[0] as Container };
}

async function batch() {
  const definition = JSON.parse(await readFile(join(DIR, 'aws-batch-job-definition.json'), 'utf8')) as Record<string, any>;
  const submit = JSON.parse(await readFile(join(DIR, 'aws-batch-submit-job.json'), 'utf8')) as Record<string, any>;
  return { definition, submit };
}

const shardsOf = (args: readonly string[]): number => Number(args[args.indexOf('--shards') + 1]);
/** Exit codes that say "retrying cannot help" (the error table's non-retried rows). */
const FINAL = [EXIT.config, EXIT.auth, EXIT.payment, EXIT.execution];

describe('config/kubernetes manifests', () => {
  it('indexed-job.yaml: an Indexed Job, one pod per shard, a backoff per index, a failure policy by exit code', async () => {
    const { configMap, job, container } = await k8s();
    expect(job.apiVersion).toBe('batch/v1');
    expect(job.spec.completionMode).toBe('Indexed');
    expect(job.spec.backoffLimitPerIndex).toBeGreaterThanOrEqual(1);
    expect(job.spec.template.spec.restartPolicy).toBe('Never');
    expect(job.spec.completions).toBe(shardsOf(container.args));
    expect(job.spec.parallelism).toBe(job.spec.completions);
    expect(container.args.slice(0, 2)).toEqual(['run', '/etc/sluice/jobs.yaml']);
    const failIndex = job.spec.podFailurePolicy.rules.find((r: { action: string }) => r.action === 'FailIndex');
    expect(failIndex.onExitCodes).toMatchObject({ containerName: container.name, operator: 'In' });
    expect([...failIndex.onExitCodes.values].sort()).toEqual(FINAL);
    for (const code of failIndex.onExitCodes.values) expect(EXIT_CODE_DOCS.map((d) => d.code)).toContain(code);
    // Failures worth retrying (network, service, I/O) are left to backoffLimitPerIndex.
    expect(failIndex.onExitCodes.values).not.toContain(EXIT.other);
    expect(failIndex.onExitCodes.values).not.toContain(EXIT.io);
    const runId = container.env.find((e) => e.name === 'SLUICE_RUN_ID');
    expect(runId?.valueFrom?.fieldRef?.fieldPath).toBe("metadata.labels['batch.kubernetes.io/controller-uid']");
    expect(job.spec.template.spec.volumes[0].configMap.name).toBe(configMap.metadata.name);
    expect(Object.keys(configMap.data)).toEqual(['jobs.yaml']);
  });

  it('the AWS Batch array job runs the same command, as many shards as array children, with the same exit rules', async () => {
    const { container } = await k8s();
    const { definition, submit } = await batch();
    expect(definition.containerProperties.command).toEqual(container.args);
    expect(submit.arrayProperties.size).toBe(shardsOf(definition.containerProperties.command));
    expect(submit.jobDefinition).toBe(definition.jobDefinitionName);
    const rules = definition.retryStrategy.evaluateOnExit as { onExitCode: string; action: string }[];
    expect(rules.filter((r) => r.action === 'EXIT').map((r) => Number(r.onExitCode)).sort()).toEqual(FINAL);
    expect(rules.at(-1)).toEqual({ onExitCode: '*', action: 'RETRY' });
  });

  describe('the command runs, one process per index, as each launcher starts it', () => {
    let svc: TestService;
    let s3: LocalS3;
    let gate: PreconditionGate;
    let dir: string;
    let jobFile: string;
    beforeAll(async () => {
      svc = await startTestService({ sampleRows: 2000, limits: { page_rows: 250 } });
      s3 = await startLocalS3();
      await s3.createBucket('cluster');
      gate = await startPreconditionGate(s3.endpoint);
      dir = await mkdtemp(join(tmpdir(), 'sluice-kube-'));
      jobFile = join(dir, 'jobs.yaml');
      await writeFile(jobFile, (await k8s()).configMap.data['jobs.yaml']);
    });
    afterAll(async () => {
      await gate?.stop();
      await s3?.stop();
      await svc?.close();
      await rm(dir, { recursive: true, force: true });
    });

    const env = (prefix: string) => ({
      SERVICE_BASE_URL: svc.url,
      SERVICE_API_KEY: svc.keys.demo.admin,
      EXPORT_BUCKET: 'cluster',
      EXPORT_PREFIX: prefix,
      ROWS_PER_PART: '300',
      S3_ENDPOINT: gate.endpoint,
      S3_PATH_STYLE: 'true',
      AWS_REGION: s3.region,
    });

    async function exported(prefix: string): Promise<number> {
      const local = join(dir, prefix);
      await s3.download('cluster', prefix, local);
      const manifest = JSON.parse(await readFile(join(local, '_manifest.json'), 'utf8')) as { files: { path: string }[]; shards: { count: number } };
      expect(manifest.shards.count).toBe(4);
      const [row] = await duck(`select count(distinct id)::int as n from read_parquet([${manifest.files.map((f) => `'${join(local, f.path)}'`).join(', ')}])`);
      return Number(row!.n);
    }

    it('Kubernetes: JOB_COMPLETION_INDEX 0..3 and the Job uid as run id', async () => {
      const { container } = await k8s();
      const args = container.args.map((a) => (a === '/etc/sluice/jobs.yaml' ? jobFile : a));
      const runs = await Promise.all([0, 1, 2, 3].map((i) => sluice(args, { env: { ...env('kube'), JOB_COMPLETION_INDEX: String(i), SLUICE_RUN_ID: '3f1c6a2e-kube' } })));
      for (const run of runs) expect(run.code, run.stderr).toBe(0);
      expect(runs.filter((r) => / committed$/m.test(r.stdout))).toHaveLength(1);
      expect(await exported('kube')).toBe(2000);
    });

    it('AWS Batch: AWS_BATCH_JOB_ARRAY_INDEX 0..3, the array job id as run id', async () => {
      const { definition } = await batch();
      const args = (definition.containerProperties.command as string[]).map((a) => (a === '/etc/sluice/jobs.yaml' ? jobFile : a));
      const runs = await Promise.all(
        [0, 1, 2, 3].map((i) => sluice(args, { env: { ...env('batch'), AWS_BATCH_JOB_ARRAY_INDEX: String(i), AWS_BATCH_JOB_ARRAY_SIZE: '4', AWS_BATCH_JOB_ID: `7d3e0b4c-batch:${i}` } })),
      );
      for (const run of runs) expect(run.code, run.stderr).toBe(0);
      expect(runs.filter((r) => / committed$/m.test(r.stdout))).toHaveLength(1);
      expect(await exported('batch')).toBe(2000);
    });
  });
});
