import { isMap, isPair, isScalar, isSeq, type Document, type LineCounter, type Node } from 'yaml';
import type { JobFileIssue } from './errors.ts';
import { formatPath } from './yamlPath.ts';

export type Env = Readonly<Record<string, string | undefined>>;

// `$${X}` is a literal `${X}`; `${X}` must be set; `${X:-default}` falls back when X is unset or empty.
const REFERENCE = /\$\$\{|\$\{([^}]*)\}|\$\{/g;
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Replaces `${VAR}` references in every scalar value of `doc`, in place, before validation.
 * It works on values rather than on the raw text so that comments are left alone, line numbers
 * stay exact, and a value may contain any character. A plain (unquoted) scalar that becomes a
 * number or a boolean is typed as YAML would have typed it (`rows: ${ROWS:-1000}` is a number);
 * a quoted one stays a string. A plain value that becomes empty removes its field, so
 * `endpoint: ${S3_ENDPOINT:-}` means "the default unless S3_ENDPOINT is set" (quote it to keep
 * an empty string). Returns one issue per unresolvable reference.
 */
export function interpolateDocument(doc: Document, env: Env, lineCounter: LineCounter): JobFileIssue[] {
  const issues: JobFileIssue[] = [];
  const visit = (node: unknown, path: (string | number)[]): void => {
    if (isMap(node)) {
      for (const pair of [...node.items]) {
        if (!isPair(pair)) continue;
        const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
        visit(pair.value, [...path, key]);
        if (isScalar(pair.value) && pair.value.type === 'PLAIN' && pair.value.value === '' && String(pair.value.source ?? '').includes('${')) {
          node.items.splice(node.items.indexOf(pair), 1);
        }
      }
    } else if (isSeq(node)) {
      node.items.forEach((item, index) => visit(item, [...path, index]));
    } else if (isScalar(node) && typeof node.value === 'string' && node.value.includes('${')) {
      const result = interpolateString(node.value, env);
      if (typeof result === 'string') {
        node.value = node.type === 'PLAIN' ? retype(result) : result;
      } else {
        const pos = node.range ? lineCounter.linePos(node.range[0]) : undefined;
        issues.push({ path: formatPath(path), line: pos?.line, col: pos?.col, message: result.error });
      }
    }
  };
  visit(doc.contents as Node | null, []);
  return issues;
}

/** Interpolates one string; returns the result or the first error. Exported for tests. */
export function interpolateString(text: string, env: Env): string | { error: string } {
  let error: string | undefined;
  const out = text.replace(REFERENCE, (match: string, body: string | undefined) => {
    if (error !== undefined) return match;
    if (match === '$${') return '${';
    if (body === undefined) {
      error = `unterminated \${ in "${text}" (write \${NAME} or \${NAME:-default}; $\${ for a literal)`;
      return match;
    }
    const cut = body.indexOf(':-');
    const name = cut === -1 ? body : body.slice(0, cut);
    if (!NAME.test(name)) {
      error = `"\${${body}}" is not a variable reference (write \${NAME} or \${NAME:-default}; $\${ for a literal)`;
      return match;
    }
    const value = env[name];
    if (cut !== -1) return value === undefined || value === '' ? body.slice(cut + 2) : value;
    if (value === undefined) {
      error = `environment variable ${name} is not set (set it, or give a default: \${${name}:-value})`;
      return match;
    }
    return value;
  });
  return error === undefined ? out : { error };
}

function retype(text: string): string | number | boolean {
  if (/^[-+]?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?$/.test(text)) {
    const n = Number(text);
    if (Number.isFinite(n)) return n;
  }
  if (text === 'true') return true;
  if (text === 'false') return false;
  return text;
}
