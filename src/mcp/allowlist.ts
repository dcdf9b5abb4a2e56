import { realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Where the server may write: a list of local directories and object-store prefixes
 * (`s3://bucket/prefix`), given by whoever starts the server. Deny by default: with no entry, no
 * output is allowed. A destination is allowed when it is an entry or lies under one; local paths
 * are compared after resolving `..` and symbolic links (of the part that exists), so neither can
 * lead out of an allowed directory.
 */
export class OutputAllowlist {
  readonly entries: readonly string[];

  constructor(entries: readonly string[], cwd: string) {
    this.entries = entries.map((entry) => (isUrl(entry) ? trimUrl(entry) : realLocal(resolve(cwd, localPath(entry)))));
  }

  /**
   * The destination as the sink will see it (a local path made absolute, so that the server's
   * working directory decides nothing later), or the reason it is refused.
   */
  check(path: string, cwd: string): { allowed: true; path: string } | { allowed: false; reason: string } {
    if (path === '-') return { allowed: false, reason: 'standard output carries the MCP protocol: write to a directory or a bucket prefix' };
    if (this.entries.length === 0) return { allowed: false, reason: 'the server allows no output location: start it with --allow-output DIR_OR_PREFIX (repeatable)' };
    if (isUrl(path)) {
      const url = trimUrl(path);
      if (/(^|\/)\.\.?(\/|$)/.test(url.replace(/^[a-z][a-z0-9+.-]*:\/\//i, ''))) return { allowed: false, reason: `${path}: "." and ".." segments are not allowed in an object-store path` };
      const ok = this.entries.some((entry) => isUrl(entry) && (url === entry || url.startsWith(`${entry}/`)));
      return ok ? { allowed: true, path: url } : { allowed: false, reason: this.#outside(path) };
    }
    const absolute = resolve(cwd, localPath(path));
    const real = realLocal(absolute);
    const ok = this.entries.some((entry) => !isUrl(entry) && within(entry, real));
    return ok ? { allowed: true, path: absolute } : { allowed: false, reason: this.#outside(path) };
  }

  #outside(path: string): string {
    return `${path} is outside the allowed output locations (${this.entries.join(', ')}); the server was started with --allow-output for those only`;
  }
}

function isUrl(path: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(path) && !path.startsWith('file://');
}

function localPath(path: string): string {
  return path.startsWith('file://') ? fileURLToPath(path) : path;
}

function trimUrl(url: string): string {
  return url.replace(/\/+$/, '');
}

function within(dir: string, path: string): boolean {
  const rel = relative(dir, path);
  return rel === '' || (!isAbsolute(rel) && rel !== '..' && !rel.startsWith(`..${sep}`));
}

/** The path with the symbolic links of its longest existing ancestor resolved (the rest does not exist yet). */
function realLocal(path: string): string {
  let head = path;
  const tail: string[] = [];
  for (;;) {
    try {
      return join(realpathSync(head), ...tail);
    } catch {
      const parent = dirname(head);
      if (parent === head) return path;
      tail.unshift(basename(head));
      head = parent;
    }
  }
}
