import type { IncomingMessage } from 'node:http';
import type { Scope } from '../../protocol/index.ts';
import type { Principal } from '../auth.ts';
import type { Reply } from './reply.ts';
import { HttpError } from './errors.ts';

export interface RequestContext {
  req: IncomingMessage;
  url: URL;
  /** Decoded path parameters, by the names in the route pattern. */
  params: Record<string, string>;
  principal: Principal;
  /** The service's own origin (`public_url`, else the bound address), for absolute next_uri. */
  origin: string;
  /** The JSON body (undefined when empty), read lazily under the body size limit. */
  body(): Promise<unknown>;
  /** The body's bytes as sent (CSV or NDJSON rows of an upload insert), under the same limit. */
  rawBody(): Promise<Buffer>;
}

export interface Route {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** Path under `/api`, with `:name` segments. */
  path: string;
  scope: Scope;
  /** The rate-limit class: by default `read` for Read-scope routes, `write` for the rest; executions are `write` though Read may run them. */
  rate?: 'read' | 'write';
  handle(ctx: RequestContext): Promise<Reply>;
}

interface Compiled {
  route: Route;
  regex: RegExp;
  names: string[];
}

export type Match = { kind: 'found'; route: Route; params: Record<string, string> } | { kind: 'wrong-method'; allow: string[] } | { kind: 'none' };

/** An explicit table of routes: 404 when no path matches, 405 (with Allow) when only the method is wrong. */
export class Router {
  readonly #routes: Compiled[];

  constructor(routes: Route[]) {
    this.#routes = routes.map((route) => {
      const names: string[] = [];
      const pattern = route.path.replace(/:([a-z_]+)/g, (_m, name: string) => {
        names.push(name);
        return '([^/]+)';
      });
      return { route, regex: new RegExp(`^${pattern}$`), names };
    });
  }

  match(method: string, path: string): Match {
    // The official clients write some routes with a trailing slash (`POST /v1/query/`): one is
    // accepted on every route, as the same operation.
    if (path.length > 1 && path.endsWith('/') && !path.endsWith('//')) path = path.slice(0, -1);
    const allow: string[] = [];
    for (const c of this.#routes) {
      const m = c.regex.exec(path);
      if (m === null) continue;
      if (c.route.method !== method) {
        allow.push(c.route.method);
        continue;
      }
      const params: Record<string, string> = {};
      c.names.forEach((name, i) => {
        try {
          params[name] = decodeURIComponent(m[i + 1] ?? '');
        } catch {
          throw new HttpError(400, `Bad Request: the path segment "${m[i + 1]}" is not valid percent-encoding`);
        }
      });
      return { kind: 'found', route: c.route, params };
    }
    return allow.length > 0 ? { kind: 'wrong-method', allow } : { kind: 'none' };
  }
}
