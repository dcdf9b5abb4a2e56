export { destinationOf, openDestination } from './openDestination.ts';
export { storeDestination } from './storeDestination.ts';
export { streamDestination } from './streamDestination.ts';
export { prefixed } from './prefixed.ts';
export { sweep, type SweepOptions } from './sweep.ts';
export { LEASE_PREFIX, LEASE_RENEW_MS, LEASE_TTL_MS } from './leases.ts';
