import { describe, expect, it } from 'vitest';
import { ConfigError, InvalidArgumentError, ServiceClient } from '../../src/client/index.ts';

describe('ServiceClient configuration', () => {
  it('names the missing environment variables and what to do', () => {
    const err = catchSync(() => new ServiceClient({ env: {} }));
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toContain('set SERVICE_API_KEY or pass { apiKey }');
    expect(err.message).toContain('set SERVICE_BASE_URL');
    const onlyUrl = catchSync(() => new ServiceClient({ env: { SERVICE_API_KEY: 'k' } }));
    expect(onlyUrl.message).not.toContain('SERVICE_API_KEY');
    expect(onlyUrl.message).toContain('SERVICE_BASE_URL');
    // Unlike the CLI, the library starts no embedded service: it says so, and how to start one.
    expect(onlyUrl.message).toContain("the library starts no service (the CLI does): for the local one, startService from 'sluice/service'");
  });

  it('reads both from the environment', async () => {
    const client = new ServiceClient({ env: { SERVICE_API_KEY: 'k', SERVICE_BASE_URL: 'http://127.0.0.1:9/api/' } });
    expect(client.baseUrl).toBe('http://127.0.0.1:9/api');
    await client.close();
  });

  it('rejects a base URL that is not http(s) and never echoes a key in it', () => {
    const err = catchSync(() => new ServiceClient({ apiKey: 'k', baseUrl: 'not a url?api_key=sk_secret' }));
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).not.toContain('sk_secret');
    expect(catchSync(() => new ServiceClient({ apiKey: 'k', baseUrl: 'ftp://host/api' })).message).toContain('http or https');
    expect(catchSync(() => new ServiceClient({ apiKey: 'k', baseUrl: 'http://h/api', retry: { attempts: 0 } })).message).toContain('retry.attempts');
  });

  it('checks arguments before sending anything', async () => {
    const client = new ServiceClient({ apiKey: 'k', baseUrl: 'http://127.0.0.1:9/api' });
    await expect(client.getResults('01ARZ3NDEKTSV4RRFFQ69G5FAV', { limit: -1 })).rejects.toThrow(/getResults: invalid result options: limit/);
    await expect(client.createQuery({ name: '', query_sql: 'SELECT 1' })).rejects.toThrow(InvalidArgumentError);
    await expect(client.upsertView({ name: 'oops', query_id: 1 })).rejects.toThrow(/name: a view name starts with result_/);
    await expect(client.executeQuery(1.5)).rejects.toThrow(/queryId must be a non-negative integer, got 1.5/);
    expect(client.stats.requests).toBe(0);
    await client.close();
  });
});

function catchSync(fn: () => unknown): Error {
  try {
    fn();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a throw');
}
