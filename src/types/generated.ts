/**
 * Functions generated from source text (`new Function`), made once per distinct source and kept:
 * the per-row code of a column list is compiled once per process, and every decoder or builder
 * of the same columns (one per page) shares it, with the optimized code V8
 * made for it, instead of warming a fresh copy up on each page.
 *
 * `params` are the names of what the code closes over; the result is the function that binds
 * them and returns the generated function. Undefined when code cannot be generated here (e.g.
 * `--disallow-code-generation-from-strings`); callers then take their general path.
 */
type Maker = (...bound: unknown[]) => unknown;

const made = new Map<string, Maker | null>();
/** Column lists seen by one process are few; the bound keeps a pathological caller from growing it without end. */
const LIMIT = 256;

export function generated(params: readonly string[], body: string): Maker | undefined {
  const key = `${params.join(',')}\n${body}`;
  let make = made.get(key);
  if (make === undefined) {
    try {
      make = new Function(...params, body) as Maker;
    } catch {
      make = null;
    }
    if (made.size >= LIMIT) made.delete(made.keys().next().value!);
    made.set(key, make);
  }
  return make ?? undefined;
}
