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
// off): later runs skip compiling (and, from the sources, type-stripping) what they load. A cache
// directory that cannot be created or written only means no cache.
(await import('node:module')).enableCompileCache?.();
const { main } = await import(fromSource ? '../src/cli/main.ts' : '../dist/src/cli/main.js');

process.exitCode = await main(process.argv.slice(2));
