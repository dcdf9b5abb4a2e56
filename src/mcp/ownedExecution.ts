// An execution a call starts is the call's: charged to the session's budget, and cancelled when
// the call is. Both need its id, and a submission cut mid-flight by the client's cancel may still
// have created an execution whose id the call never learns: it would run, and be charged to the
// team, outside the session's budget (a session of 30 credits was seen charging the team 150). So
// the submission is not aborted by the call's cancel; it completes (bounded by its own deadline),
// and an execution submitted for a call cancelled meanwhile is cancelled at once. Until the id is
// known, the call is charged the credits it reserved.
import { ServiceError } from '../client/errors.ts';
import type { ToolCall } from './context.ts';
import type { SourcePlan } from './source.ts';

/** How long a submission may take once sent: it is not cut by the call's cancel (see the header). */
const SUBMIT_TIMEOUT_MS = 60_000;
/** How long the cancel of an execution, or the reading of its final cost, may take. */
const SETTLE_TIMEOUT_MS = 5_000;

/** A plan to read: the plan's own (a reuse), or the execution this call started for it. */
export interface StartedPlan {
  readonly plan: SourcePlan;
  /** The call started it: it is cancelled when the call is, and charged to the session. */
  readonly owned: boolean;
}

/**
 * Submits the plan's execution, if it executes, without the call's signal, and returns the plan
 * reading that execution by id. A call cancelled while it was submitted cancels it and throws.
 */
export async function startOwned(plan: SourcePlan, call: ToolCall): Promise<StartedPlan> {
  if (plan.action !== 'execute' || 'executionId' in plan.stream) return { plan, owned: false };
  const source = plan.stream;
  const options = { signal: AbortSignal.timeout(SUBMIT_TIMEOUT_MS) };
  let execution;
  try {
    execution =
      'sql' in source
        ? await call.server.client.execute({ sql: source.sql }, { ...options, ...(source.performance ? { performance: source.performance } : {}) })
        : 'queryId' in source
          ? await call.server.client.execute({ queryId: source.queryId, ...(source.parameters ? { parameters: source.parameters } : {}) }, { ...options, ...(source.performance ? { performance: source.performance } : {}) })
          : undefined;
  } catch (error) {
    // The service answered: nothing was created, nothing is charged. No answer: it may have been.
    if (error instanceof ServiceError && error.status !== undefined) call.facts.submitRefused = true;
    throw error;
  }
  if (execution === undefined) return { plan, owned: false };
  call.facts.executionId = execution.id;
  call.server.log.info('execution started', { execution_id: execution.id });
  if (call.signal.aborted) {
    await execution.cancel({ signal: AbortSignal.timeout(SETTLE_TIMEOUT_MS) }).catch(() => undefined);
    throw call.signal.reason instanceof Error ? call.signal.reason : new Error('the call was cancelled');
  }
  return { plan: { ...plan, stream: { executionId: execution.id, started: true } }, owned: true };
}

/**
 * Runs `run` over the plan's execution (started here when the plan executes) and settles the
 * call's reservation however it ends: nothing for a reuse; the reserved credits while the id of
 * an execution it may have started is unknown, or while that execution has not ended (a cancel
 * that did not land); else what the service charged. A call that ends cancelled (or failed)
 * cancels the execution it started first.
 */
export async function runCharged<T>(plan: SourcePlan, call: ToolCall, settle: (charged: number) => void, run: (started: StartedPlan) => Promise<T>): Promise<T> {
  let done = false;
  try {
    const out = await run(await startOwned(plan, call));
    done = true;
    return out;
  } finally {
    if (!done && plan.action === 'execute' && call.facts.executionId !== undefined) {
      await call.server.client.cancel(call.facts.executionId, { signal: AbortSignal.timeout(SETTLE_TIMEOUT_MS) }).catch(() => undefined);
    }
    const charged = await chargeOf(plan.action === 'execute', plan.credits, call);
    call.facts.credits = charged;
    settle(charged);
  }
}

/** What the call is charged: see runCharged. `executes`: it may have started an execution; `reserved`: its reservation. */
export async function chargeOf(executes: boolean, reserved: number, call: ToolCall): Promise<number> {
  if (!executes) return 0;
  const id = call.facts.executionId;
  if (id === undefined) return call.facts.submitRefused === true ? 0 : reserved;
  try {
    const status = await call.server.client.getStatus(id, { signal: AbortSignal.timeout(SETTLE_TIMEOUT_MS) });
    return status.is_execution_finished ? (status.execution_cost_credits ?? reserved) : reserved;
  } catch {
    return reserved;
  }
}
