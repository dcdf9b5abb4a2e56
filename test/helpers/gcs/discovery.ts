import { readFileSync } from 'node:fs';
import { Ajv, type ValidateFunction } from 'ajv';

// Validates the stand-in's traffic against Google's published description of the JSON API (the
// vendored part of the storage:v1 discovery document beside this file): which method a request
// is, that its path and query parameters are the method's (names, required ones, types, enums),
// that a request body and every JSON answer match the method's schema. The stand-in answers a
// request that breaks it with 400 and records why, and tests assert nothing was recorded.

interface Parameter {
  readonly type: 'string' | 'integer' | 'boolean';
  readonly location: 'path' | 'query';
  readonly required?: boolean;
  readonly format?: string;
  readonly enum?: readonly string[];
  readonly minimum?: string;
}

interface Method {
  readonly id: string;
  readonly httpMethod: string;
  readonly path: string;
  readonly parameters: Record<string, Parameter>;
  readonly request?: { $ref: string };
  readonly response?: { $ref: string };
  readonly supportsMediaDownload?: boolean;
  readonly mediaUpload?: { protocols: { simple: { path: string } } };
}

interface Discovery {
  readonly servicePath: string;
  readonly parameters: Record<string, Parameter>;
  readonly schemas: Record<string, unknown>;
  readonly resources: Record<string, { methods: Record<string, Method> }>;
}

const doc = JSON.parse(readFileSync(new URL('./storage-v1.json', import.meta.url), 'utf8')) as Discovery;

/** A discovery schema as JSON Schema: `$ref: "Object"` to a definition, int64 strings as digits, no invented properties. */
function jsonSchema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(jsonSchema);
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === '$ref' && typeof value === 'string') out.$ref = `#/definitions/${value}`;
    else if (key === 'id' || key === 'annotations' || key === 'description' || key === 'default' || key === 'format') continue;
    else if (key === 'properties') out.properties = Object.fromEntries(Object.entries(value as object).map(([k, v]) => [k, jsonSchema(v)]));
    else out[key] = jsonSchema(value);
  }
  const format = (node as { format?: string }).format;
  if (format === 'int64' || format === 'uint64') out.pattern = format === 'int64' ? '^-?[0-9]+$' : '^[0-9]+$';
  if (format === 'date-time') out.pattern = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(?:\\.\\d+)?Z$';
  if ('properties' in out && !('additionalProperties' in out)) out.additionalProperties = false;
  return out;
}

const ajv = new Ajv({ strict: false, allErrors: true });
const definitions = Object.fromEntries(Object.entries(doc.schemas).map(([name, schema]) => [name, jsonSchema(schema)]));
const validators = new Map<string, ValidateFunction>();
function validator(ref: string): ValidateFunction {
  let fn = validators.get(ref);
  if (fn === undefined) validators.set(ref, (fn = ajv.compile({ definitions, $ref: `#/definitions/${ref}` })));
  return fn;
}

export interface Matched {
  readonly method: Method;
  readonly params: Record<string, string>;
  readonly upload: boolean;
}

const methods = Object.values(doc.resources).flatMap((r) => Object.values(r.methods));

/** The method a request is, with its path parameters decoded; undefined when none matches. */
export function matchMethod(httpMethod: string, pathname: string): Matched | undefined {
  for (const method of methods) {
    if (method.httpMethod !== httpMethod) continue;
    const candidates: [string, boolean][] = [[`/${doc.servicePath}${method.path}`, false]];
    if (method.mediaUpload) candidates.push([method.mediaUpload.protocols.simple.path, true]);
    for (const [template, upload] of candidates) {
      const names: string[] = [];
      const pattern = template.replace(/[.*+?^${}()|[\]\\]/g, (c) => (c === '{' || c === '}' ? c : `\\${c}`)).replace(/\{(\w+)\}/g, (_, name: string) => (names.push(name), '([^/]+)'));
      const match = new RegExp(`^${pattern}$`).exec(pathname);
      if (match) return { method, upload, params: Object.fromEntries(names.map((n, i) => [n, decodeURIComponent(match[i + 1]!)])) };
    }
  }
  return undefined;
}

/** What is wrong with a request's query for its method (unknown, missing, ill-typed parameters), or []. */
export function queryProblems(matched: Matched, query: URLSearchParams): string[] {
  const problems: string[] = [];
  const { method } = matched;
  for (const [name, value] of query) {
    const param = method.parameters[name] ?? doc.parameters[name];
    if (name === 'alt' && value === 'media' && method.supportsMediaDownload) continue;
    if (param === undefined || param.location !== 'query') problems.push(`${method.id}: unknown query parameter ${name}`);
    else problems.push(...valueProblems(method.id, name, param, value));
  }
  if (query.has('uploadType') && !matched.upload) problems.push(`${method.id}: uploadType on a path that takes no upload`);
  if (matched.upload && !['media', 'resumable', 'multipart'].includes(query.get('uploadType') ?? '')) problems.push(`${method.id}: an upload needs uploadType media, multipart or resumable`);
  for (const [name, param] of Object.entries(method.parameters)) {
    if (param.required && param.location === 'query' && !query.has(name)) problems.push(`${method.id}: required query parameter ${name} missing`);
  }
  return problems;
}

function valueProblems(id: string, name: string, param: Parameter, value: string): string[] {
  if (param.type === 'boolean' && value !== 'true' && value !== 'false') return [`${id}: ${name} must be true or false, got ${value}`];
  if (param.type === 'integer' && !/^-?\d+$/.test(value)) return [`${id}: ${name} must be an integer, got ${value}`];
  if (param.type === 'integer' && param.minimum !== undefined && Number(value) < Number(param.minimum)) return [`${id}: ${name} must be at least ${param.minimum}`];
  if (param.format === 'int64' && !/^-?\d+$/.test(value)) return [`${id}: ${name} must be an int64 in decimal, got ${value}`];
  if (param.enum !== undefined && !param.enum.includes(value)) return [`${id}: ${name} must be one of ${param.enum.join(', ')}, got ${value}`];
  return [];
}

/** What is wrong with a JSON body against a schema of the document (`Object`, `Objects`), or []. */
export function schemaProblems(ref: string, body: unknown, what: string): string[] {
  const validate = validator(ref);
  if (validate(body)) return [];
  return (validate.errors ?? []).map((e) => `${what} (${ref}): ${e.instancePath || '/'} ${e.message}`);
}
