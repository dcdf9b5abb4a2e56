import { expect, it } from 'vitest';
import { EXECUTION_STATES, holdsResult, isTerminal } from '../../src/protocol/index.ts';

it('holdsResult: exactly the two completed states hold a result, and both are terminal', () => {
  const holding = EXECUTION_STATES.filter((state) => holdsResult({ state }));
  expect(holding).toEqual(['QUERY_STATE_COMPLETED', 'QUERY_STATE_COMPLETED_PARTIAL']);
  expect(holding.every(isTerminal)).toBe(true);
});
