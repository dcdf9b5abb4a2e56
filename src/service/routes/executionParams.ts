import type { ServiceContext } from '../context.ts';
import type { ExecutionRecord } from '../executionRecord.ts';
import { HttpError } from '../http/errors.ts';
import { canonicalValue, ParameterError } from '../parameters.ts';

/**
 * `params.<name>` on the results of one execution. The official TypeScript client repeats the
 * values it executed with there; the execution fixed its parameters already, so a value that
 * agrees (after the same normalisation as at execute: `3.0` = `3`) is accepted and changes nothing.
 * A name the execution does not have, or a different value, would ask for a result this execution
 * is not: refused with 400 naming the parameter, both values and what to do.
 */
export function checkExecutionParams(svc: ServiceContext, rec: ExecutionRecord, given: Record<string, string>): void {
  const names = Object.keys(rec.parameters);
  for (const [name, value] of Object.entries(given)) {
    const ran = rec.parameters[name];
    if (ran === undefined) {
      const has = names.length === 0 ? 'has no parameters' : `has only ${names.map((n) => `"${n}"`).join(', ')}`;
      throw new HttpError(400, `Bad Request: params.${name}: execution ${rec.id} has no parameter "${name}" (it ${has}); drop params.${name}`);
    }
    if (String(ran) === value) continue;
    const declared = svc.queries.get(rec.queryId)?.parameters.find((p) => p.key === name);
    let canonical: string = value;
    if (declared !== undefined) {
      try {
        canonical = canonicalValue(declared, value, `params.${name}`);
      } catch (err) {
        if (err instanceof ParameterError) throw new HttpError(400, `Bad Request: ${err.message}`);
        throw err;
      }
    }
    if (canonical !== String(ran)) {
      throw new HttpError(
        400,
        `Bad Request: params.${name}=${JSON.stringify(value)} contradicts execution ${rec.id}, which ran with ${name}=${JSON.stringify(String(ran))}; execute the query with that value for its result, or drop params.${name}`,
      );
    }
  }
}
