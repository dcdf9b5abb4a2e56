#!/usr/bin/env node
// In a checkout, Node 24 runs the TypeScript sources directly (type stripping). An installed
// package has no src/ (Node does not strip types under node_modules): it runs the compiled dist/.
// This file is plain JavaScript that any Node parses, so an older Node gets a sentence, not a
// stack trace about the .ts extension.
import { existsSync } from 'node:fs';

const major = Number(process.versions.node.split('.')[0]);
const fromSource = existsSync(new URL('../src/cli/main.ts', import.meta.url));
if (major < 24) {
  const how = fromSource ? "; run it through npx or npm scripts, which use the project's own Node 24" : '';
  process.stderr.write(`sluice needs Node 24 (this is Node ${process.versions.node})${how}\n`);
  process.exit(2);
}
// Node's module compile cache (NODE_COMPILE_CACHE moves it, NODE_DISABLE_COMPILE_CACHE=1 turns it
// off): later runs skip compiling (and, from the sources, type-stripping) what they load. It is on
// before the first TypeScript module is imported: a single module stripped outside the cache loads
// Node's type stripper, ~15 MB of the process's peak. A cache directory that cannot be created or
// written only means no cache.
(await import('node:module')).enableCompileCache?.();
// Two memory settings that only work when a process starts (src/memoryDefaults.ts; docs/operations.md,
// "Memory"): every command gets them unless the environment sets them or SLUICE_MEMORY_DEFAULTS=0:
// the process replaces itself (same pid, stdio and signals) with one started with them. A platform
// without process.execve runs as is.
if (process.platform === 'linux' && typeof process.execve === 'function') {
  const { memoryDefaults } = await import(fromSource ? '../src/memoryDefaults.ts' : '../dist/src/memoryDefaults.js');
  const tuned = memoryDefaults(process.env, process.execArgv);
  if (tuned !== undefined) {
    try {
      process.execve(process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], tuned);
    } catch {
      // Runs without them.
    }
  }
}
const exitHooks = () => import(fromSource ? '../src/exitHooks.ts' : '../dist/src/exitHooks.js');
// SIGINT/SIGTERM are handled here for the whole life of the process, so that there is never a moment
// in which one ends it by the signal instead of with an exit code. While a command runs, its own
// handlers (src/cli/dispatch.ts) stop it and this one stands aside; before one has started, the
// process exits 130; once the command has finished, it exits with the command's code.
let finished = false;
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    if (finished || process.listenerCount(signal) > 1) return;
    void exitHooks().then(({ exitAfterHooks }) => exitAfterHooks(130));
  });
}
const { main } = await import(fromSource ? '../src/cli/main.ts' : '../dist/src/cli/main.js');

const code = await main(process.argv.slice(2));
finished = true;
// The command has closed what it opened (the embedded service included): the process exits now,
// through the exit hooks (native work is stopped first: ending the process under a DuckDB call would
// abort it), rather than wind down on its own, which takes as long as the native teardown.
await (await exitHooks()).exitAfterHooks(code);
