/**
 * Frees a JSON page's body once its text is made, the page read: left to the garbage collector,
 * bodies of several MB each float, with the pages' texts, up to V8's allowance of external memory
 * between full collections, and each full collection on that account grows the young generation.
 * Only a buffer over an ArrayBuffer of its own (as the transport makes) is freed, never a slice of
 * Node's shared pool.
 */
export function releaseBody(body: Uint8Array): void {
  const whole = body.buffer;
  if (whole instanceof ArrayBuffer && body.byteOffset === 0 && body.byteLength === whole.byteLength) whole.transfer(0);
}
