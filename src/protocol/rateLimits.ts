/**
 * The service's two rate classes, per key: `read` is status, results, get and list (the real
 * service's "high limit" class), `write` is execute, cancel and every change ("low limit").
 */
export type RateClass = 'read' | 'write';

/**
 * The real service's published per-key limits by plan, requests per minute (high class: 40 free,
 * 200 plus, 1,000 enterprise; the low class is lower: 15, 70 and 350 as its rate-limit page lists
 * them). The client's `rate_limit: <plan>` and the local service's team plans both mean these.
 */
export const RATE_PLANS = Object.freeze({
  free: Object.freeze({ read: 40, write: 15 }),
  plus: Object.freeze({ read: 200, write: 70 }),
  enterprise: Object.freeze({ read: 1000, write: 350 }),
});
export type RatePlan = keyof typeof RATE_PLANS;
export const RATE_PLAN_NAMES = Object.keys(RATE_PLANS) as [RatePlan, ...RatePlan[]];
