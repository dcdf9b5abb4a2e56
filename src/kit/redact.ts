// Credentials never reach an error, a log line or a summary. Wherever configuration is echoed, it
// goes through `redact` first: by field name, so a connector's new secret field is covered when
// its name says what it is (`*_secret`, `*_token`, `password`, `*access_key*`, `account_key`,
// `connection_string`, `credentials`).

export const REDACTED = '[redacted]';

const SECRET_FIELD = /secret|password|passwd|token|credential|access_?key|account_?key|private_?key|api_?key|connection_?string/i;

/** Whether a field of that name holds a credential; `api_key_env` names a variable, not a key. */
export function isSecretField(name: string): boolean {
  return SECRET_FIELD.test(name) && !/_env$/i.test(name);
}

/**
 * A copy of `value` with every secret field's value replaced, at any depth, and the password of
 * any URL with user info masked. `path` is where the value sits (`s3.secret_access_key`): a value
 * under a secret field is redacted whole.
 */
export function redact(value: unknown, path = ''): unknown {
  if (path.split(/[.[\]]/).some((segment) => segment !== '' && isSecretField(segment))) return value === undefined ? undefined : REDACTED;
  return redactValue(value, 0);
}

function redactValue(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return maskUserInfo(value);
  if (typeof value !== 'object' || value === null || depth > 20) return value;
  if (Array.isArray(value)) return value.map((v) => redactValue(v, depth + 1));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, isSecretField(k) ? REDACTED : redactValue(v, depth + 1)]));
}

/** `https://user:pw@host/x` -> `https://user:[redacted]@host/x`. */
function maskUserInfo(text: string): string {
  // A raw password may hold '/': everything up to the '@' goes (at worst a port and path are masked too).
  return text.replace(/(\b[a-z][a-z0-9+.-]*:\/\/[^/\s:@]*:)[^@\s]*@/gi, `$1${REDACTED}@`);
}
