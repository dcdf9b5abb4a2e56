export * from './errors.ts';
export * from './jobSchema.ts';
export * from './loadJobFile.ts';
export * from './jsonSchema.ts';
export { interpolateString, type Env } from './interpolate.ts';
export { cronProblem } from './cron.ts';
