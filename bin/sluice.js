#!/usr/bin/env node
// sluice runs its TypeScript sources directly on Node 24 (type stripping); see package.json engines.
import { main } from '../src/cli/main.ts';

process.exitCode = await main(process.argv.slice(2));
