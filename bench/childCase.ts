// A function of a bench case module run in a child process of its own (its memory, its threads):
// the JSON of the last line it prints.
import { spawn } from 'node:child_process';
import { once } from 'node:events';

export async function runChildCase<T>(moduleUrl: string, name: string, input: object, env?: Record<string, string>): Promise<T> {
  const script = `const m = await import(${JSON.stringify(moduleUrl)}); await m.${name}(${JSON.stringify(input)});`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`${name} ${JSON.stringify({ ...input, key: undefined })} exited with ${code}`);
  return JSON.parse(out.trim().split('\n').at(-1)!) as T;
}
