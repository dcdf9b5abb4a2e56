import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { COMMANDS, runCli } from '../../src/cli/commands/index.ts';
import { EXIT, EXIT_CODE_DOCS, exitCodeOf } from '../../src/cli/exitCodes.ts';
import type { CliIo, OutputStream } from '../../src/cli/io.ts';
import { createLogger } from '../../src/cli/log.ts';
import { createProgressBar, renderProgress } from '../../src/cli/progress.ts';
import { InvalidApiKeyError, ForbiddenError, PaymentRequiredError, PaymentChallengeError, ExecutionFailedError, NetworkError, AbortedError } from '../../src/client/errors.ts';
import { JobFileError } from '../../src/config/errors.ts';
import { DestinationError } from '../../src/kit/errors.ts';
import { BudgetExceededError } from '../../src/jobs/errors.ts';
import { ROOT } from './sluiceProcess.ts';

function capture(isTTY = false): OutputStream & { text(): string } {
  let text = '';
  return { isTTY, write: (c: string | Uint8Array) => ((text += String(c)), true), once: () => undefined, text: () => text };
}

function io(): CliIo & { out: ReturnType<typeof capture>; err: ReturnType<typeof capture> } {
  const out = capture();
  const err = capture();
  return { stdout: out, stderr: err, stdin: new PassThrough(), env: {}, cwd: process.cwd(), out, err };
}

describe('command table', () => {
  it.each(COMMANDS.filter((c) => !c.passthrough).map((c) => c.name))('`sluice %s --help` prints its usage and options', async (name) => {
    const cli = io();
    const code = await runCli([...name.split(' '), '--help'], { io: cli, signal: new AbortController().signal });
    expect(code).toBe(0);
    expect(cli.out.text()).toMatch(new RegExp(`^Usage: sluice ${name}\\b`));
    expect(cli.out.text()).toContain('--log-format');
  });

  it('`sluice serve --help` (and `sluice help serve`) looks like every other command\'s help', async () => {
    for (const argv of [['serve', '--help'], ['serve', '-h'], ['help', 'serve']]) {
      const cli = io();
      expect(await runCli(argv, { io: cli, signal: new AbortController().signal })).toBe(0);
      const text = cli.out.text();
      expect(text).toMatch(/^Usage: sluice serve \[options\]\n\nRun the local query service/);
      expect(text).toMatch(/\nOptions:\n {6}--host HOST +Interface to bind.*\(default: 127\.0\.0\.1\)\n/);
      for (const option of ['--port PORT', '--data-dir DIR', '--config FILE']) expect(text).toContain(option);
    }
  });

  it('names are unique and every option has a description', () => {
    expect(new Set(COMMANDS.map((c) => c.name)).size).toBe(COMMANDS.length);
    for (const c of COMMANDS) for (const [name, o] of Object.entries(c.options ?? {})) expect(o.description, `${c.name} --${name}`).not.toBe('');
  });

  it('has the commands of the issue', () => {
    const names = COMMANDS.map((c) => c.name);
    for (const n of ['run', 'validate', 'schema', 'query', 'status', 'cancel', 'results', 'views list', 'views get', 'views upsert', 'views delete', 'views refresh', 'queries create', 'queries get', 'queries update', 'queries archive', 'upload', 'upload create', 'upload insert', 'upload clear', 'upload delete', 'upload list', 'datasets list', 'datasets search', 'serve', 'schedule']) {
      expect(names).toContain(n);
    }
  });

  it('a wrong number of arguments is exit 2 with the usage', async () => {
    const cli = io();
    expect(await runCli(['status'], { io: cli, signal: new AbortController().signal })).toBe(2);
    expect(cli.err.text()).toMatch(/sluice status takes 1 argument\(s\), got 0\nusage: sluice status EXECUTION_ID/);
  });
});

describe('exit codes', () => {
  it('maps the typed errors to one table', () => {
    expect(exitCodeOf(new JobFileError('f', [{ path: 'x', message: 'bad' }]))).toBe(EXIT.config);
    expect(exitCodeOf(new InvalidApiKeyError('401'))).toBe(EXIT.auth);
    expect(exitCodeOf(new ForbiddenError('403'))).toBe(EXIT.auth);
    expect(exitCodeOf(new PaymentRequiredError('402'))).toBe(EXIT.payment);
    expect(exitCodeOf(new PaymentChallengeError('402', { challenge: 'Payment' }))).toBe(EXIT.paymentChallenge);
    expect(exitCodeOf(new BudgetExceededError('j', 'max_credits', 'over'))).toBe(EXIT.payment);
    expect(exitCodeOf(new ExecutionFailedError('failed', {}))).toBe(EXIT.execution);
    expect(exitCodeOf(new DestinationError('file:///x', 'writing', new Error('EACCES')))).toBe(EXIT.io);
    expect(exitCodeOf(Object.assign(new Error('disk full'), { code: 'ENOSPC' }))).toBe(EXIT.io);
    expect(exitCodeOf(new AbortedError('aborted', {}))).toBe(EXIT.interrupted);
    expect(exitCodeOf(new NetworkError('down', { phase: 'connect' }))).toBe(EXIT.other);
    expect(exitCodeOf(new Error('wrapped', { cause: new InvalidApiKeyError('401') }))).toBe(EXIT.auth);
    expect(exitCodeOf(new Error('anything'), true)).toBe(EXIT.interrupted);
    expect(EXIT_CODE_DOCS.map((d) => d.code)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 130]);
  });
});

describe('docs/cli.md', () => {
  it('documents exactly the exit codes of src/cli/exitCodes.ts, which `sluice --help` prints', async () => {
    const doc = readFileSync(join(ROOT, 'docs', 'cli.md'), 'utf8');
    const section = doc.slice(doc.indexOf('## Exit codes'));
    const rows = [...section.slice(0, section.indexOf('\n\n', section.indexOf('| Code |'))).matchAll(/^\| (\d+) \| (.+) \|$/gm)];
    expect(rows.map(([, code, meaning]) => ({ code: Number(code), meaning }))).toEqual(EXIT_CODE_DOCS);
    const cli = io();
    expect(await runCli(['--help'], { io: cli, signal: new AbortController().signal })).toBe(0);
    for (const d of EXIT_CODE_DOCS) expect(cli.out.text()).toContain(`${String(d.code).padStart(3)}  ${d.meaning}\n`);
  });

  it('lists every command of the command table, and every command in it exists', () => {
    const doc = readFileSync(join(ROOT, 'docs', 'cli.md'), 'utf8');
    const section = doc.slice(doc.indexOf('## Commands'), doc.indexOf('## Exit codes'));
    const table = section.split('\n').filter((l) => l.startsWith('| `sluice ')).join('\n');
    // `sluice views list\|get\|...` stands for one command per subcommand.
    const documented = [...table.matchAll(/`sluice ([^`]+)`/g)].flatMap(([, usage]) => {
      const [cmd, second] = usage!.split(' ');
      return second !== undefined && /^[a-z]+(\\\|[a-z]+)+$/.test(second) ? second.split('\\|').map((sub) => `${cmd} ${sub}`) : [cmd!];
    });
    expect(new Set(documented)).toEqual(new Set(COMMANDS.map((c) => c.name)));
  });
});

describe('progress and logs', () => {
  it('renders rows, pages, MB/s and time left', () => {
    const line = renderProgress('job', { rows: 250_000, totalRows: 1_000_000, pages: 8, totalPages: 32, bytes: 20_000_000, elapsedMs: 2000 });
    expect(line).toBe('job [######..................]  25% 250,000/1,000,000 rows  pages 8/32  10.0 MB/s  0:06 left');
    expect(renderProgress('job', { rows: 10, pages: 1, bytes: 0, elapsedMs: 0 })).toBe('job 10 rows  pages 1  -- MB/s');
  });

  it('fits the bar to the terminal: narrower, it drops detail (pages, then speed, then the bar) rather than being cut', () => {
    const snapshot = { rows: 250_000, totalRows: 1_000_000, pages: 8, totalPages: 32, bytes: 20_000_000, elapsedMs: 2000 };
    const full = renderProgress('quickstart', snapshot);
    expect(renderProgress('quickstart', snapshot, 200)).toBe(full);
    for (const width of [100, 80, 60, 50, 40]) {
      const line = renderProgress('quickstart', snapshot, width);
      expect(line.length, `${width}: ${line}`).toBeLessThan(width);
      // What matters most stays: how far, and how many rows.
      expect(line, `${width}`).toContain('25%');
      expect(line, `${width}`).toContain('250,000/1,000,000 rows');
    }
    expect(renderProgress('quickstart', snapshot, 80)).toContain('0:06 left');
    // The bar redrawn in place follows the terminal's width as it is at each draw.
    const tty = Object.assign(capture(true), { columns: 80 });
    const bar = createProgressBar(tty, 'quickstart', () => 0);
    bar.update(snapshot);
    bar.done();
    const drawn = tty.text().split('\r').at(-1)!.replace(/\x1b\[K/g, '').trimEnd();
    expect(drawn.length).toBeLessThan(80);
    expect(drawn).toContain('25%');
    expect(drawn).toContain('0:06 left');
  });

  it('writes one JSON object per line in json format, and key=value text otherwise', () => {
    const json = capture();
    createLogger(json, { format: 'json', now: () => new Date('2026-01-01T00:00:00Z') }).child({ job: 'a' }).info('done', { rows: 10n });
    expect(JSON.parse(json.text())).toEqual({ time: '2026-01-01T00:00:00.000Z', level: 'info', msg: 'done', job: 'a', rows: '10' });
    const text = capture();
    createLogger(text, { format: 'text', level: 'warn' }).info('hidden');
    createLogger(text, { format: 'text' }).warn('careful', { file: 'x y' });
    expect(text.text()).toBe('warn: careful  file="x y"\n');
  });

  it('keeps a multi-line message readable: the first line as msg, the others as lines', () => {
    const message = 'execution failed: line 2:3: bad column\n2 |   nme from t\n  |   ^';
    const json = capture();
    createLogger(json, { format: 'json', now: () => new Date('2026-01-01T00:00:00Z') }).error(message, { job: 'a' });
    expect(JSON.parse(json.text())).toEqual({
      time: '2026-01-01T00:00:00.000Z', level: 'error', msg: 'execution failed: line 2:3: bad column', detail: ['2 |   nme from t', '  |   ^'], job: 'a',
    });
    const text = capture();
    createLogger(text, { format: 'text' }).error(message, { job: 'a' });
    expect(text.text()).toBe('error: execution failed: line 2:3: bad column  job=a\n  2 |   nme from t\n    |   ^\n');
  });
});
