// --read-only refuses SQL that writes before anything is submitted. What writes is the service's
// call, not the server's: it classifies the SQL with its own sandbox (POST /v1/sql/classify, the
// same reading of statements its executions get), so no second parser here can disagree with it.
// A service that cannot classify (the official one has no such operation) runs no SQL in
// read-only mode: not knowing is not knowing it writes nothing.
import { ServiceError } from '../client/errors.ts';
import type { ClassifyResponse } from '../protocol/index.ts';
import { ToolRefusedError } from './budget.ts';
import type { ToolCall } from './context.ts';
import type { SourceArgs } from './source.ts';

/** Throws READ_ONLY when the SQL (or saved query) the call would execute writes, cannot be classified, or is denied by the service's check (not proven to only read). */
export async function refuseWrites(args: SourceArgs, call: ToolCall): Promise<void> {
  const { client } = call.server;
  let answer: ClassifyResponse;
  try {
    if (args.sql !== undefined) answer = await client.classifySql(args.sql, { signal: call.signal });
    else if (args.query_id !== undefined) answer = await client.classifyQuery(args.query_id, { signal: call.signal, ...(args.parameters ? { parameters: args.parameters } : {}) });
    else return;
  } catch (error) {
    if (!(error instanceof ServiceError) || error.status === undefined) throw error;
    throw new ToolRefusedError(
      'READ_ONLY',
      `refused: this server is read-only and the service could not tell whether the SQL writes (${error.message}); nothing was executed`,
    );
  }
  const writing = answer.statements.findIndex((s) => s.writes);
  if (writing !== -1) {
    const at = answer.statements[writing]!;
    throw new ToolRefusedError(
      'READ_ONLY',
      `refused: statement ${writing + 1} (line ${at.line}:${at.column}) creates, fills or drops a table or view, and this server is read-only (--read-only); nothing was executed`,
      { statements: answer.statements },
    );
  }
  // A statement the sandbox denies was judged by no reading that shows it only reads (a WITH
  // before INSERT or DELETE is one): not proven read-only, so not submitted.
  const denial = answer.denial;
  if (denial === undefined) return;
  throw new ToolRefusedError(
    'READ_ONLY',
    `refused: the statement at line ${denial.line}:${denial.column} cannot be shown to only read (the service's check: ${denial.message}), and this server is read-only (--read-only); nothing was submitted. Write it as a plain query (SELECT, or WITH ... SELECT)`,
    { statements: answer.statements, denial },
  );
}
