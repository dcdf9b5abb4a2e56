import type { McpLog } from './context.ts';

/** Environment variables whose values are secrets by their name (PASS covers PASSWD, PASSWORD, PASSPHRASE). */
const SECRET_NAME = /(KEY|SECRET|TOKEN|PASS|AUTH|CREDENTIAL|DSN)/i;
/** Shorter values are not treated as secrets: replacing them would mangle ordinary text. */
const MIN_SECRET_LENGTH = 8;
const MASK = '***';

/**
 * The values that must never appear in a tool result or a log line: the service API key in use, the
 * HTTP token, every environment value whose name says it is a secret, and every value a job file's
 * `${VAR}` interpolation read (whatever the variable is called: a connection string in `${DB}` is
 * one). The code never puts them there; this is the last check on everything the server sends or
 * logs, in case a server or a library echoes one: in the rows of a result, an error, a log field.
 * Values are replaced where they stand, in strings (keys included), never in JSON text, where a
 * secret holding `"` or `\` is escaped and would not be found.
 */
export class Secrets {
  readonly #values: readonly string[];

  /**
   * `known`: the secrets in use (the API key, an HTTP token), whatever the variables holding them
   * are called; `interpolated`: the names of the variables a job file's interpolation read.
   */
  constructor(known: readonly (string | undefined)[], env: Readonly<Record<string, string | undefined>>, interpolated: Iterable<string> = []) {
    const values = new Set<string>();
    for (const value of known) if (value) values.add(value);
    const read = new Set(interpolated);
    for (const [name, value] of Object.entries(env)) {
      if (value !== undefined && value.length >= MIN_SECRET_LENGTH && (SECRET_NAME.test(name) || read.has(name))) values.add(value);
    }
    // Longest first: a secret that contains another is replaced whole.
    this.#values = [...values].sort((a, b) => b.length - a.length);
  }

  scrub(text: string): string {
    let out = text;
    for (const secret of this.#values) if (out.includes(secret)) out = out.split(secret).join(MASK);
    return out;
  }

  /** The value with every secret replaced in its strings and object keys, at any depth (arrays, rows, nested errors). */
  scrubValue<T>(value: T): T {
    return this.#walk(value, 0) as T;
  }

  #walk(value: unknown, depth: number): unknown {
    if (typeof value === 'string') return this.scrub(value);
    if (value === null || typeof value !== 'object' || depth > 64) return value;
    if (Array.isArray(value)) return value.map((v) => this.#walk(v, depth + 1));
    if (value instanceof Error) return this.scrub(value.message);
    const json = (value as { toJSON?: unknown }).toJSON;
    if (typeof json === 'function') return this.#walk((json as () => unknown).call(value), depth + 1);
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[this.scrub(k)] = this.#walk(v, depth + 1);
    return out;
  }

  /** `log` with every message and field scrubbed. */
  log(log: McpLog): McpLog {
    const wrap = (level: keyof McpLog) => (message: string, fields?: Record<string, unknown>) =>
      log[level](this.scrub(message), fields === undefined ? undefined : this.scrubValue(fields));
    return { info: wrap('info'), warn: wrap('warn'), error: wrap('error') };
  }
}
