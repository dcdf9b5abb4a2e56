#!/usr/bin/env node
// In a checkout, Node 24 runs the TypeScript sources directly (type stripping). An installed
// package has no src/ (Node does not strip types under node_modules): it runs the compiled dist/.
import { existsSync } from 'node:fs';

const fromSource = existsSync(new URL('../src/cli/main.ts', import.meta.url));
const { main } = await import(fromSource ? '../src/cli/main.ts' : '../dist/src/cli/main.js');

process.exitCode = await main(process.argv.slice(2));
