// Loaded with `node --import` by tests that check what a command or module pulls in: records every
// package specifier resolved in the process and writes them, at exit, to $SLUICE_TRACK_IMPORTS.
import { writeFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const packages = new Set<string>();
registerHooks({
  resolve(specifier, context, nextResolve) {
    if (!/^(?:\.|\/|node:|file:|data:)/.test(specifier)) packages.add(specifier);
    return nextResolve(specifier, context);
  },
});
process.on('exit', () => {
  const out = process.env.SLUICE_TRACK_IMPORTS;
  if (out) writeFileSync(out, JSON.stringify([...packages].sort()));
});
