// The root of sluice's errors and its one ConfigError live in src/kit, the ground connectors stand
// on (they throw them, and the kit imports nothing of the rest of src); the rest of src imports them here.
export { SluiceError, ConfigError, type SluiceErrorOptions, type ConfigIssue, type ConfigErrorOptions } from './kit/sluiceError.ts';
