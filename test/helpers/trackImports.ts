// Loaded with `node --import` by tests that check what a command or module pulls in: records every
// package specifier resolved in the process's main thread and writes them, at exit, to
// $SLUICE_TRACK_IMPORTS (a worker thread, which runs the process's --import too, writes nothing).
import { writeFileSync } from 'node:fs';
import { registerHooks } from 'node:module';
import { isMainThread } from 'node:worker_threads';

const packages = new Set<string>();
registerHooks({
  resolve(specifier, context, nextResolve) {
    if (!/^(?:\.|\/|node:|file:|data:)/.test(specifier)) packages.add(specifier);
    return nextResolve(specifier, context);
  },
});
process.on('exit', () => {
  const out = process.env.SLUICE_TRACK_IMPORTS;
  if (out && isMainThread) writeFileSync(out, JSON.stringify([...packages].sort()));
});
