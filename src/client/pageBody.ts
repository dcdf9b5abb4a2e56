/**
 * Response bodies the transport made, each over an ArrayBuffer of its own that only the answer
 * holds: the ones a reader may free once it has read them (a body a caller's own client hands back
 * may be kept by that caller, and is never freed).
 */
const made = new WeakSet<Uint8Array>();

/** Marks a body the transport made over an ArrayBuffer of its own (see {@link releaseBody}). */
export function madeBody<T extends Uint8Array>(body: T): T {
  made.add(body);
  return body;
}

/**
 * Frees a JSON page's body once its text is made, the page read: left to the garbage collector,
 * bodies of several MB each float, with the pages' texts, up to V8's allowance of external memory
 * between full collections, and each full collection on that account grows the young generation.
 * Only a body the transport made is freed (`own`: one a thread received for itself), and only when
 * it spans its whole ArrayBuffer, never a slice of a shared one such as Node's pool.
 */
export function releaseBody(body: Uint8Array, own = made.has(body)): void {
  const whole = body.buffer;
  if (own && whole instanceof ArrayBuffer && body.byteOffset === 0 && body.byteLength === whole.byteLength) whole.transfer(0);
}
