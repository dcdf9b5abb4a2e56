/**
 * What this process has learned of each client's service: that it answered a page as Arrow (a
 * `sluice serve` reached by URL, which the client was not told serves Arrow pages). A later stream
 * of that client reading under `wire: auto` then asks for no CSV pages ahead of its first page
 * (`headStart()`): they would be stopped as soon as that page came back as Arrow, after the service
 * had perhaps begun encoding the result as CSV for nothing. A service that serves JSON and CSV
 * only (the real one) never answers Arrow, so its early pages are asked for as before.
 */
import type { StreamClient } from '../source.ts';

/** Clients whose service answered a page as Arrow; weak, so a client let go is forgotten. */
const arrowServed = new WeakSet<StreamClient>();

/** `client`'s service answered a page as Arrow. */
export function learnArrowServed(client: StreamClient): void {
  arrowServed.add(client);
}

/** Whether `client`'s service answered a page as Arrow in this process. */
export function arrowServedTo(client: StreamClient): boolean {
  return arrowServed.has(client);
}
