/** Environment variables whose values are secrets by their name. */
const SECRET_NAME = /(KEY|SECRET|TOKEN|PASSWORD|CREDENTIAL)/i;
/** Shorter values are not treated as secrets: replacing them would mangle ordinary text. */
const MIN_SECRET_LENGTH = 8;

/**
 * The values that must never appear in a tool result or a log line: the service API key in use, the
 * HTTP token, and every environment value whose name says it is a secret. The code never puts them
 * there; this is the last check on everything the server sends or logs, in case a server or a
 * library echoes one.
 */
export class Secrets {
  readonly #values: readonly string[];

  /** `known`: the secrets in use (the API key, an HTTP token), whatever the variables holding them are called. */
  constructor(known: readonly (string | undefined)[], env: Readonly<Record<string, string | undefined>>) {
    const values = new Set<string>();
    for (const value of known) if (value) values.add(value);
    for (const [name, value] of Object.entries(env)) {
      if (value !== undefined && value.length >= MIN_SECRET_LENGTH && SECRET_NAME.test(name)) values.add(value);
    }
    // Longest first: a secret that contains another is replaced whole.
    this.#values = [...values].sort((a, b) => b.length - a.length);
  }

  scrub(text: string): string {
    let out = text;
    for (const secret of this.#values) if (out.includes(secret)) out = out.split(secret).join('***');
    return out;
  }

  /** A JSON-safe value with every secret replaced in its strings. */
  scrubValue<T>(value: T): T {
    return JSON.parse(this.scrub(JSON.stringify(value))) as T;
  }
}
