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
// Node's module compile cache (NODE_COMPILE_CACHE moves it, NODE_DISABLE_COMPILE_CACHE=1 turns it
// off): later runs skip compiling (and, from the sources, type-stripping) what they load. A cache
// directory that cannot be created or written only means no cache.
(await import('node:module')).enableCompileCache?.();
const { main } = await import(fromSource ? '../src/cli/main.ts' : '../dist/src/cli/main.js');

const code = await main(process.argv.slice(2));
// Native work is stopped first (the exit hooks, as a second signal runs them): ending the
// process under a DuckDB call would abort it.
const exitNow = async () => {
  const { runExitHooks } = await import(fromSource ? '../src/exitHooks.ts' : '../dist/src/exitHooks.js');
  await runExitHooks(5_000);
  process.exit(code);
};
// Interrupted: exit now rather than let Node wind down on its own, which takes as long as the
// embedded service's close.
if (code === 130) await exitNow();
process.exitCode = code;
// The command has finished and its code stands: a SIGINT/SIGTERM that lands while Node winds down
// (the command gave up its own handlers) ends the process with that code, never by the signal.
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => void exitNow());
