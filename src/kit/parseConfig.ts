import type { z } from 'zod';
import { ConfigError, type ConfigIssue } from './errors.ts';

/**
 * Validates `input` against `schema`; on failure throws a ConfigError whose issues carry the
 * dotted field path (prefixed with `prefix`) and the value found there, so a message reads
 * `format_options.compression: Invalid option ... (got "lz5")`.
 */
export function parseConfig<S extends z.ZodType>(schema: S, input: unknown, subject: string, prefix = ''): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw new ConfigError(subject, issuesOf(result.error, input, prefix));
}

export function issuesOf(error: z.ZodError, input: unknown, prefix = ''): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      // One issue per unknown key, so the message names the field the user typed.
      const parent = valueAt(input, issue.path);
      for (const key of issue.keys) {
        issues.push({
          path: joinPath(prefix, [...issue.path, key]),
          message: 'unknown field (remove it or check the spelling)',
          value: isRecord(parent) ? parent[key] : undefined,
        });
      }
      continue;
    }
    const value = valueAt(input, issue.path);
    // "Invalid input: expected string, received undefined" says less than "required (string)".
    const message = issue.code === 'invalid_type' && value === undefined ? `required (${issue.expected})` : issue.message;
    issues.push({ path: joinPath(prefix, issue.path), message, value });
  }
  return issues;
}

export function joinPath(prefix: string, path: readonly PropertyKey[]): string {
  let out = prefix;
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out;
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input;
  for (const key of path) {
    if (Array.isArray(value) && typeof key === 'number') value = value[key];
    else if (isRecord(value) && typeof key === 'string') value = value[key];
    else return undefined;
  }
  return value;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
