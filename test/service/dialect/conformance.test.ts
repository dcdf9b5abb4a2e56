// The DuneSQL conformance matrix (test/service/dialect/conformance.yaml) against the real local
// service: every case without an `unsupported` mark gives the documented result and type, every
// marked case still differs (the mark goes once it passes), the pass rate stays at 90% or more,
// and docs/dunesql.md is what this run renders (else `npm run docs`).
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  conformancePage,
  conformanceService,
  loadCases,
  PAGE_FILE,
  runConformance,
  type CaseOutcome,
} from '../../../scripts/dunesqlConformance.ts';

let svc: Awaited<ReturnType<typeof conformanceService>>;
let outcomes: CaseOutcome[];
beforeAll(async () => {
  svc = await conformanceService();
  outcomes = await runConformance(svc.url, await loadCases());
}, 300_000);
afterAll(async () => {
  await svc?.close();
});

describe('DuneSQL conformance', () => {
  test('at least 150 cases, each with a result and type or an error', async () => {
    const cases = await loadCases();
    expect(cases.length).toBeGreaterThanOrEqual(150);
    for (const c of cases) expect(c.error !== undefined || c.type !== undefined, c.sql).toBe(true);
  });

  test('every case not marked unsupported gives the documented result and type', () => {
    const failing = outcomes.filter((o) => !o.passed && o.case.unsupported === undefined);
    expect(failing.map((o) => `${o.case.family}: ${o.case.sql} -> ${o.got}`)).toEqual([]);
  });

  test('every case marked unsupported still differs (remove the mark once it passes)', () => {
    const passing = outcomes.filter((o) => o.passed && o.case.unsupported !== undefined);
    expect(passing.map((o) => `${o.case.family}: ${o.case.sql}`)).toEqual([]);
  });

  test('90% or more of the cases pass', () => {
    expect(outcomes.filter((o) => o.passed).length / outcomes.length).toBeGreaterThanOrEqual(0.9);
  });

  test('docs/dunesql.md is current (else run `npm run docs`)', () => {
    expect(readFileSync(PAGE_FILE, 'utf8')).toBe(conformancePage(outcomes));
  });
});
