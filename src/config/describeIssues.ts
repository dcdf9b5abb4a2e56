import type { z } from 'zod';
import type { Document, LineCounter } from 'yaml';
import type { JobFileIssue } from './errors.ts';
import { redact } from '../kit/index.ts';
import { formatPath, positionOf } from './yamlPath.ts';
import { closest } from '../kit/closest.ts';

type Issue = z.core.$ZodIssue;

/**
 * Turns zod issues into messages a person can act on: the YAML path, the line and column,
 * what was expected and what was found. A union reports the branch the input came closest to,
 * so `source: {sql: 1}` says "expected string" rather than four alternatives.
 */
export function describeIssues(issues: readonly Issue[], data: unknown, doc: Document, lineCounter: LineCounter, schema: z.ZodType): JobFileIssue[] {
  const out: JobFileIssue[] = [];
  const add = (path: readonly PropertyKey[], message: string, target: 'value' | 'key' = 'value'): void => {
    const pos = positionOf(doc, lineCounter, path, target);
    out.push({ path: formatPath(path), line: pos?.line, col: pos?.col, message });
  };
  const walk = (list: readonly Issue[], base: readonly PropertyKey[]): void => {
    for (const issue of list) {
      const path = [...base, ...issue.path];
      const value = valueAt(data, path);
      // What is echoed back has its credentials redacted (by field name, at any depth).
      const shown = show(redact(value, formatPath(path)));
      switch (issue.code) {
        case 'unrecognized_keys': {
          const allowed = allowedKeys(schema, path, data);
          for (const key of issue.keys) {
            const hint = closest(key, allowed);
            const list = allowed.length > 0 ? ` (allowed: ${allowed.join(', ')})` : '';
            add([...path, key], `unknown field${hint ? `, did you mean "${hint}"?` : list}`, 'key');
          }
          break;
        }
        case 'invalid_union': {
          const options = (issue as { options?: unknown[] }).options;
          if (issue.errors.length === 0 && Array.isArray(options)) {
            // A discriminated union whose discriminator value matched nothing; its other fields are
            // still checked, so a misspelt format does not hide an unknown field beside it.
            add(path, `expected one of ${options.map(String).join('|')}, got ${shown}`);
            const parent = path.slice(0, -1);
            walk(sharedFieldIssues(schemaAt(schema, parent, data), valueAt(data, parent), path.at(-1)), parent);
            break;
          }
          const best = closestBranch(issue.errors);
          if (best === undefined || value === undefined || (typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).length === 0)) {
            add(path, `${issue.message === 'Invalid input' ? 'expected' : issue.message}${unionChoices(schema, path)}, got ${shown}`);
          } else {
            walk(best, path);
          }
          break;
        }
        case 'invalid_value':
          add(path, `expected ${issue.values.length === 1 ? show(issue.values[0]) : `one of ${issue.values.map(String).join('|')}`}, got ${shown}`);
          break;
        case 'invalid_type':
          add(path, value === undefined ? `required (${issue.expected})` : `expected ${issue.expected}, got ${typeName(value)} ${shown}`);
          break;
        case 'too_small':
        case 'too_big':
        case 'invalid_format':
        case 'not_multiple_of':
          add(path, `${issue.message.replace(/^(Too small|Too big|Invalid [a-z]+): /, '')}, got ${shown}`);
          break;
        default:
          add(path, issue.message);
      }
    }
  };
  walk(issues, []);
  return out;
}

function closestBranch(branches: readonly (readonly Issue[])[]): readonly Issue[] | undefined {
  let best: readonly Issue[] | undefined;
  let bestScore = Number.POSITIVE_INFINITY;
  for (const branch of branches) {
    // An unknown key or a missing required field means "wrong branch" more than a bad value does.
    const score = branch.reduce((n, i) => n + (i.code === 'unrecognized_keys' ? 2 * i.keys.length : i.code === 'invalid_type' && i.path.length === 1 ? 2 : 1), 0);
    if (score < bestScore) {
      best = branch;
      bestScore = score;
    }
  }
  return best;
}

/**
 * The schema at `path`, unwrapped from optional/default/pipe wrappers. A union is resolved to
 * the option the data picks (its discriminator value, or the first object option that has the
 * key), so the allowed keys of `outputs[0]` are those of its format.
 */
function schemaAt(schema: z.ZodType, path: readonly PropertyKey[], data: unknown): z.core.$ZodType | undefined {
  let node: z.core.$ZodType | undefined = unwrap(schema);
  for (let i = 0; i <= path.length; i++) {
    node = pickOption(node, valueAt(data, path.slice(0, i)));
    if (i === path.length || !node) return node;
    const key = path[i];
    const def = node._zod.def as { type: string; shape?: Record<string, z.core.$ZodType>; element?: z.core.$ZodType };
    if (def.type === 'object' && typeof key === 'string') node = unwrap(def.shape?.[key]);
    else if (def.type === 'array' && typeof key === 'number') node = unwrap(def.element);
    else return undefined;
  }
  return node;
}

function pickOption(node: z.core.$ZodType | undefined, value: unknown): z.core.$ZodType | undefined {
  const def = node?._zod.def as { type: string; options?: z.core.$ZodType[]; discriminator?: string } | undefined;
  if (def?.type !== 'union' || !def.options) return node;
  const record = typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  if (def.discriminator !== undefined) {
    const wanted = record[def.discriminator];
    const match = def.options.find((o) => {
      const d = unwrap(shapeOf(o)[def.discriminator!])?._zod.def as { values?: unknown[] } | undefined;
      return d?.values?.includes(wanted) ?? false;
    });
    return match ? unwrap(match) : node;
  }
  const match = def.options.find((o) => Object.keys(record).some((k) => k in shapeOf(o)));
  return match ? unwrap(match) : node;
}

function unwrap(schema: z.core.$ZodType | undefined): z.core.$ZodType | undefined {
  let node = schema;
  for (;;) {
    const def = node?._zod.def as { type: string; innerType?: z.core.$ZodType; in?: z.core.$ZodType } | undefined;
    if (!def) return node;
    if ((def.type === 'optional' || def.type === 'default' || def.type === 'nullable' || def.type === 'prefault') && def.innerType) node = def.innerType;
    else if (def.type === 'pipe' && def.in) node = def.in;
    else return node;
  }
}

/** The keys allowed at `path`: of its object, or of every option of a union the data picks none of. */
function allowedKeys(schema: z.ZodType, path: readonly PropertyKey[], data: unknown): string[] {
  const node = schemaAt(schema, path, data);
  const def = node?._zod.def as { type: string; shape?: Record<string, unknown>; options?: z.core.$ZodType[] } | undefined;
  if (def?.type === 'union' && def.options) return [...new Set(def.options.flatMap((o) => Object.keys(shapeOf(o))))];
  return def?.type === 'object' && def.shape ? Object.keys(def.shape) : [];
}

function shapeOf(option: z.core.$ZodType): Record<string, z.core.$ZodType> {
  return (unwrap(option)?._zod.def as { shape?: Record<string, z.core.$ZodType> }).shape ?? {};
}

/**
 * The issues of `value` against a discriminated union whose discriminator it misses, as far as
 * they do not depend on which option it meant: keys no option knows, and fields every option
 * checks with the same schema. Checked against the first option, its discriminator supplied.
 */
function sharedFieldIssues(union: z.core.$ZodType | undefined, value: unknown, discriminator: PropertyKey | undefined): Issue[] {
  const def = union?._zod.def as { type: string; options?: z.core.$ZodType[] } | undefined;
  const options = def?.type === 'union' ? def.options : undefined;
  if (!options?.[0] || typeof discriminator !== 'string' || typeof value !== 'object' || value === null || Array.isArray(value)) return [];
  const shapes = options.map(shapeOf);
  const first = shapes[0]!;
  const literal = (unwrap(first[discriminator])?._zod.def as { values?: unknown[] } | undefined)?.values?.[0];
  const shared = (key: PropertyKey) => typeof key === 'string' && key !== discriminator && shapes.every((sh) => sh[key] !== undefined && sh[key] === first[key]);
  const known = (key: string) => shapes.some((sh) => key in sh);
  const result = (unwrap(options[0]) as z.ZodType).safeParse({ ...value, [discriminator]: literal });
  if (result.success) return [];
  return result.error.issues.flatMap((i): Issue[] => {
    if (i.code === 'unrecognized_keys' && i.path.length === 0) {
      const keys = i.keys.filter((k) => !known(k));
      return keys.length > 0 ? [{ ...i, keys }] : [];
    }
    return i.path.length > 0 && shared(i.path[0]!) ? [i] : [];
  });
}

function unionChoices(schema: z.ZodType, path: readonly PropertyKey[]): string {
  let node: z.core.$ZodType | undefined = unwrap(schema);
  for (const key of path) {
    const def = node?._zod.def as { type: string; shape?: Record<string, z.core.$ZodType>; element?: z.core.$ZodType } | undefined;
    if (def?.type === 'object' && typeof key === 'string') node = unwrap(def.shape?.[key]);
    else if (def?.type === 'array' && typeof key === 'number') node = unwrap(def.element);
    else return '';
  }
  const def = node?._zod.def as { type: string; options?: z.core.$ZodType[] } | undefined;
  if (def?.type !== 'union' || !def.options) return '';
  const shapes = def.options.map((option) => {
    const d = unwrap(option)?._zod.def as { type: string; shape?: Record<string, unknown> } | undefined;
    return d?.type === 'object' && d.shape ? `{${Object.keys(d.shape).join(', ')}}` : d?.type ?? '?';
  });
  return ` one of ${shapes.join(' | ')}`;
}


function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input;
  for (const key of path) {
    if (Array.isArray(value) && typeof key === 'number') value = value[key];
    else if (typeof value === 'object' && value !== null && !Array.isArray(value)) value = (value as Record<PropertyKey, unknown>)[key];
    else return undefined;
  }
  return value;
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'list';
  if (typeof value === 'object') return 'mapping';
  return typeof value;
}

export function show(value: unknown): string {
  if (value === undefined) return 'nothing';
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    text = undefined;
  }
  text ??= String(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}
