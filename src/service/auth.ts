import { SCOPES, MESSAGES, type Scope } from '../protocol/index.ts';
import type { ServiceSettings } from './settings.ts';
import { HttpError } from './http/errors.ts';

export interface Principal {
  team: string;
  /** The API key itself: rate limits count per key. */
  key: string;
  /** The widest scope the key holds; each scope includes the ones before it. */
  scope: Scope;
}

const rank = (s: Scope): number => SCOPES.indexOf(s);

/** Maps API keys to their team and scope (protocol.md section 6: Read < Write < Admin). */
export class KeyRing {
  readonly #keys = new Map<string, Principal>();

  constructor(settings: ServiceSettings) {
    for (const team of settings.teams) {
      for (const k of team.keys) {
        const scope = k.scopes.reduce((a, b) => (rank(b) > rank(a) ? b : a));
        this.#keys.set(k.key, { team: team.name, key: k.key, scope });
      }
    }
  }

  /** Header first, then the `api_key` parameter; 401 when neither names a known key. */
  authenticate(header: string | string[] | undefined, param: string | null): Principal {
    const key = typeof header === 'string' && header !== '' ? header : param;
    const principal = key === null ? undefined : this.#keys.get(key);
    if (principal === undefined) throw new HttpError(401, MESSAGES.invalidKey);
    return principal;
  }
}

export function requireScope(principal: Principal, needed: Scope): void {
  if (rank(principal.scope) < rank(needed)) throw new HttpError(403, MESSAGES.missingScope(needed));
}
