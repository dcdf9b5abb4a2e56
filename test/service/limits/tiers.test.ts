import { describe, expect, it } from 'vitest';
import { parseSettings } from '../../../src/service/settings.ts';
import { executionCost, tierPolicy, VIEW_TIMEOUT_FACTOR } from '../../../src/service/limits/tiers.ts';

const settings = parseSettings({ teams: [{ name: 'demo' }], limits: { execution_timeout_ms: 1000 }, tiers: { large: { threads: 4 } } });

describe('tiers', () => {
  it('costs 10 x factor when the execution ran, 0 when it did not', () => {
    expect(executionCost(settings, 'medium', true)).toBe(10);
    expect(executionCost(settings, 'large', true)).toBe(20);
    expect(executionCost(settings, 'large', false)).toBe(0);
  });

  it('gives large more threads and each tier its timeout; views an extended one', () => {
    expect(tierPolicy(settings, 'medium')).toEqual({ performance: 'medium', threads: 1, timeoutMs: 1000, costFactor: 1, memoryLimitBytes: 1024 ** 3, tempLimitBytes: 4 * 1024 ** 3 });
    expect(tierPolicy(settings, 'large')).toEqual({ performance: 'large', threads: 4, timeoutMs: 1000, costFactor: 2, memoryLimitBytes: 2 * 1024 ** 3, tempLimitBytes: 8 * 1024 ** 3 });
    expect(tierPolicy(settings, 'medium', 'view').timeoutMs).toBe(1000 * VIEW_TIMEOUT_FACTOR);
  });
});
