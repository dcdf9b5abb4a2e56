// A reader of a first read waits for the rows of its page (LiveEncoding.waitFor); the JSON/CSV
// encoder writes its buffers out early only once they hold every row such a reader waits for
// (hungry): a write of part of a page's rows wakes nobody, and each write holds the encoder up.
import { expect, test } from 'vitest';
import { LiveEncoding } from '../../../src/service/engine/encoding/liveEncoding.ts';

test('hungry(n) only when a waiting reader\'s rows are all among the first n; advance wakes the readers whose rows are written', async () => {
  const live = new LiveEncoding('json', 'unused', { columnNames: ['a'], columnTypes: ['bigint'], rowCount: 100_000, bytes: 0, truncated: false });
  expect(live.hungry(100_000)).toBe(false);
  const woken: string[] = [];
  const first = live.waitFor(0, 30_000).then((o) => woken.push(`first ${o}`));
  const second = live.waitFor(30_000, 60_000).then((o) => woken.push(`second ${o}`));
  // Rows rendered but fewer than a page: writing them out early would wake nobody.
  expect(live.hungry(2_048)).toBe(false);
  expect(live.hungry(29_999)).toBe(false);
  expect(live.hungry(30_000)).toBe(true);
  live.advance(30_000);
  await first;
  expect(woken).toEqual(['first ready']);
  // The first reader is served: only the second one's rows count now.
  expect(live.hungry(30_000)).toBe(false);
  expect(live.hungry(59_999)).toBe(false);
  expect(live.hungry(60_000)).toBe(true);
  // A page more than eight pages past what is written is built per request.
  expect(await live.waitFor(300_000, 330_000)).toBe('far');
  live.end();
  await second;
  expect(woken).toEqual(['first ready', 'second ended']);
});
