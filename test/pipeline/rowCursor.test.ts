// The row cursor under rows(): once a page is there, a row is handed out at once, with one settled
// promise, whatever came before it (a page's first row waits for the page on the cursor's queue).
import { createHook } from 'node:async_hooks';
import { describe, expect, it } from 'vitest';
import { RowCursor, type RowPage } from '../../src/pipeline/stream/rowCursor.ts';

async function* pages(count: number, rows: number): AsyncGenerator<RowPage, void, undefined> {
  for (let p = 0; p < count; p++) {
    await new Promise((resolve) => setImmediate(resolve));
    yield { at: (i) => ({ page: p, i }), next: 0, end: rows };
  }
}

describe('RowCursor', () => {
  it('hands out the rows after a page\'s first without queueing them: about one promise a row', async () => {
    let promises = 0;
    const hook = createHook({
      init: (_id, type) => {
        if (type === 'PROMISE') promises++;
      },
    });
    const got: unknown[] = [];
    hook.enable();
    try {
      for await (const row of new RowCursor(pages(3, 1000))) got.push(row);
    } finally {
      hook.disable();
    }
    expect(got).toHaveLength(3000);
    expect(got[1500]).toEqual({ page: 1, i: 500 });
    // Queued (as every row after a page's first was), a row cost six promises; handed out at once,
    // the settled one and what the caller's await makes.
    expect(promises / got.length).toBeLessThan(2.5);
  });

  it('still queues calls made while one is running, and answers them in order', async () => {
    const cursor = new RowCursor(pages(2, 3));
    const calls = Array.from({ length: 8 }, () => cursor.next());
    const results = await Promise.all(calls);
    expect(results.map((r) => (r.done ? 'done' : r.value))).toEqual([
      { page: 0, i: 0 },
      { page: 0, i: 1 },
      { page: 0, i: 2 },
      { page: 1, i: 0 },
      { page: 1, i: 1 },
      { page: 1, i: 2 },
      'done',
      'done',
    ]);
    // Across a row that waits a turn of the event loop too: calls made at once around it.
    const long = new RowCursor(pages(1, 5000));
    for (let i = 0; i < 2040; i++) await long.next();
    const answered: number[] = [];
    await Promise.all(Array.from({ length: 20 }, () => long.next().then((r) => answered.push((r.value as { i: number }).i))));
    expect(answered).toEqual(Array.from({ length: 20 }, (_, i) => 2040 + i));
  });

  it('lets the event loop turn while a long page is used up (the pages fetched ahead come in meanwhile), rows still in order', async () => {
    let turned: number | undefined;
    const got: { page: number; i: number }[] = [];
    for await (const row of new RowCursor(pages(1, 10_000))) {
      if (got.length === 0) setImmediate(() => (turned = got.length));
      got.push(row as { page: number; i: number });
    }
    expect(got.map((r) => r.i)).toEqual(Array.from({ length: 10_000 }, (_, i) => i));
    expect(turned).toBeLessThan(5000);
  });
});
