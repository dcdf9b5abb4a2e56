import { Channel } from '../../export/channel.ts';

/**
 * Splits one async iterable into `n` that each see every item, in order, without buffering the
 * whole source: one pump reads the source and pushes each item into a channel per consumer still
 * reading, and reads the next only once every such channel has room (`highWaterMark` items each),
 * so the slowest output sets the pace (backpressure) and memory stays at n x highWaterMark items.
 * The source is read from the first consumer's first `next`. A source error reaches every consumer
 * after the items before it; a consumer that stops early (its loop breaks or it is returned) no
 * longer holds the others back; when all stop, the source is returned so it can release what it
 * holds (cancel fetches), before the last one's `return` resolves. `signal` aborting fails every
 * consumer with its reason at once.
 */
export function tee<T>(source: AsyncIterable<T>, n: number, highWaterMark = 2, signal?: AbortSignal): AsyncIterable<T>[] {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`tee: n must be a positive integer, got ${n}`);
  if (!Number.isInteger(highWaterMark) || highWaterMark < 1) throw new RangeError(`tee: highWaterMark must be a positive integer, got ${highWaterMark}`);
  if (n === 1) return [source];
  // A push waits once its item would be the highWaterMark-th untaken one: the pump holds that item.
  const branches = Array.from({ length: n }, () => new Channel<T>({ capacity: highWaterMark - 1, signal }));
  const reading = new Set(branches);
  let pumping: Promise<void> | undefined;

  const pump = async (): Promise<void> => {
    const iterator = source[Symbol.asyncIterator]();
    try {
      while (reading.size > 0 && signal?.aborted !== true) {
        const result = await iterator.next();
        if (result.done === true) {
          for (const branch of branches) branch.close();
          return;
        }
        // A branch whose consumer stopped refuses the item: it leaves the pump's set.
        await Promise.all([...reading].map((branch) => branch.push(result.value).catch(() => reading.delete(branch))));
      }
      await iterator.return?.();
    } catch (error) {
      for (const branch of branches) branch.fail(error);
    }
  };

  return branches.map((branch) => ({
    [Symbol.asyncIterator]: (): AsyncIterator<T, undefined, undefined> => {
      const items = branch[Symbol.asyncIterator]();
      return {
        next: () => {
          pumping ??= pump();
          return items.next();
        },
        return: async () => {
          await items.return?.();
          reading.delete(branch);
          if (reading.size === 0) await pumping;
          return { value: undefined, done: true };
        },
      };
    },
  }));
}
