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
  });
});
