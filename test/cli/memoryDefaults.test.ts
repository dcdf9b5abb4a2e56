// The memory settings every `sluice` process starts with (glibc's mmap threshold, V8's
// semi-spaces), and the soak bench's schedule process, which must be started with the same ones
// to measure what `sluice schedule` is (without them its RSS crept for tens of minutes where the
// command's stays flat: docs/performance.md, "Soak").
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MMAP_THRESHOLD, SEMI_SPACE_FLAG, memoryDefaults } from '../../src/memoryDefaults.ts';
import { scheduleEnv, soakLimits } from '../../bench/soak.ts';
import { LimitsSchema } from '../../src/service/settings.ts';

const BIN = fileURLToPath(new URL('../../bin/sluice.js', import.meta.url));

describe('memoryDefaults', () => {
  it('adds both settings to an environment without them, keeping its NODE_OPTIONS', () => {
    const env = memoryDefaults({ PATH: '/bin', NODE_OPTIONS: '--enable-source-maps' });
    expect(env).toEqual({ PATH: '/bin', MALLOC_MMAP_THRESHOLD_: MMAP_THRESHOLD, NODE_OPTIONS: `--enable-source-maps ${SEMI_SPACE_FLAG}` });
  });

  it('keeps values the environment or the command line sets, and asks for no restart when both are set', () => {
    expect(memoryDefaults({ MALLOC_MMAP_THRESHOLD_: '65536' })).toEqual({ MALLOC_MMAP_THRESHOLD_: '65536', NODE_OPTIONS: SEMI_SPACE_FLAG });
    expect(memoryDefaults({}, ['--max-semi-space-size=16'])).toEqual({ MALLOC_MMAP_THRESHOLD_: MMAP_THRESHOLD });
    expect(memoryDefaults({ MALLOC_MMAP_THRESHOLD_: '65536', NODE_OPTIONS: '--max-semi-space-size=4' })).toBeUndefined();
  });

  it('SLUICE_MEMORY_DEFAULTS=0 turns them off', () => {
    expect(memoryDefaults({ SLUICE_MEMORY_DEFAULTS: '0' })).toBeUndefined();
  });
});

describe.skipIf(process.platform !== 'linux' || typeof process.execve !== 'function')('bin/sluice.js (restarts itself through process.execve)', () => {
  /** What each Node process that `sluice --version` became saw, in order (a preload prints it). */
  function startsOf(extra: Record<string, string>): string[] {
    const probe = "--import=data:text/javascript,process.stderr.write('start:'+process.env.MALLOC_MMAP_THRESHOLD_+':'+process.env.NODE_OPTIONS.endsWith('semi-space-size=8')+'\\n')";
    const env: Record<string, string | undefined> = { ...process.env, NODE_OPTIONS: probe, ...extra };
    delete env.MALLOC_MMAP_THRESHOLD_;
    const r = spawnSync(process.execPath, [BIN, '--version'], { env, encoding: 'utf8', timeout: 60_000 });
    expect(r.status, r.stderr).toBe(0);
    return r.stderr.split('\n').filter((l) => l.startsWith('start:'));
  }

  it('runs every command with both settings', () => {
    expect(startsOf({})).toEqual(['start:undefined:false', `start:${MMAP_THRESHOLD}:true`]);
  });

  it('runs as started with SLUICE_MEMORY_DEFAULTS=0', () => {
    expect(startsOf({ SLUICE_MEMORY_DEFAULTS: '0' })).toEqual(['start:undefined:false']);
  });
});

describe('the soak bench', () => {
  it('starts the schedule process it watches with the settings `sluice schedule` has', () => {
    const env = scheduleEnv({ PATH: '/bin' });
    expect(env.MALLOC_MMAP_THRESHOLD_).toBe(MMAP_THRESHOLD);
    expect(env.NODE_OPTIONS).toContain(SEMI_SPACE_FLAG);
    expect(scheduleEnv({ SLUICE_MEMORY_DEFAULTS: '0' }).MALLOC_MMAP_THRESHOLD_).toBeUndefined();
  });

  it('compresses every retention of the service, so that what each bounds plateaus within the run', () => {
    const limits = LimitsSchema.parse(soakLimits());
    const minutes = (days: number): number => (days * 86_400) / 60;
    // The settings' default record retention (7 days) kept every execution record of the run in
    // the service thread's memory: the soak measured their climb as part of the slope.
    expect(minutes(limits.retention_days)).toBeLessThanOrEqual(2);
    expect(minutes(limits.execution_record_retention_days)).toBeLessThanOrEqual(4);
    expect(limits.sweep_interval_ms).toBeLessThanOrEqual(10_000);
  });
});
