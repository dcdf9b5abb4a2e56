// The table of HTTP routes in docs/local-service.md is true to the service: each route it lists exists with the
// method it says (asked with a method no route takes, the service answers 405 and names it in Allow).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../cli/sluiceProcess.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ sampleRows: 10 });
});
afterAll(() => svc?.close());

/** `METHOD /path` of each row, with the row's alternatives (`/unarchive`, `/v1/other/path`, `POST`). */
function documentedRoutes(): { method: string; path: string }[] {
  const doc = readFileSync(join(ROOT, 'docs', 'local-service.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Routes'), doc.indexOf('## Settings'));
  const routes: { method: string; path: string }[] = [];
  for (const line of section.split('\n').filter((l) => l.startsWith('| `'))) {
    const cell = line.split(' | ')[0]!;
    const [main, ...others] = [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    const [method, path] = main!.split(' ') as [string, string];
    routes.push({ method, path });
    for (const other of others) {
      if (other.startsWith('/v1/')) routes.push({ method, path: other });
      else if (other.startsWith('/')) routes.push({ method, path: path.replace(/\/[^/]+$/, other) });
      else routes.push({ method: other, path });
    }
  }
  return routes;
}

describe('docs/local-service.md: the HTTP routes', () => {
  it('lists routes the service has, each with its method', async () => {
    const routes = documentedRoutes();
    expect(routes.length).toBeGreaterThan(20);
    const wrong: string[] = [];
    for (const { method, path } of routes) {
      const url = `${svc.url}${path.replace(/\{[a-z_]+\}/g, 'x')}`;
      const res = await fetch(url, { method: 'PUT', headers: { 'X-Service-Api-Key': svc.keys.demo.admin } });
      await res.arrayBuffer();
      const allow = (res.headers.get('allow') ?? '').split(/,\s*/);
      if (res.status !== 405 || !allow.includes(method)) wrong.push(`${method} ${path}: ${res.status} allow ${allow.join(',')}`);
    }
    expect(wrong).toEqual([]);
  });

  it('names the key header the service reads', async () => {
    const doc = readFileSync(join(ROOT, 'docs', 'local-service.md'), 'utf8');
    expect(doc).toContain('`X-Service-Api-Key` header');
    const denied = await fetch(`${svc.url}/v1/usage`, { headers: { 'X-Service-Api-Key': 'sk_wrong' } });
    expect(denied.status).toBe(401);
    const allowed = await fetch(`${svc.url}/v1/usage`, { headers: { 'X-Service-Api-Key': svc.keys.demo.admin } });
    expect(allowed.status).toBe(200);
  });
});
