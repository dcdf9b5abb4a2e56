import type { z } from 'zod';
import type { ToolCall } from '../context.ts';

/** One MCP tool: its schemas (the JSON schemas clients see), and what it does. */
export interface ToolSpec<In extends z.ZodRawShape = z.ZodRawShape, Out extends z.ZodRawShape = z.ZodRawShape> {
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly input: In;
  readonly output: Out;
  /** Writes an output: not offered in read-only mode. */
  readonly writes: boolean;
  /** Reads only, spends nothing (MCP's readOnlyHint); false for tools that may execute. */
  readonly readOnly: boolean;
  run(args: z.infer<z.ZodObject<In>>, call: ToolCall): Promise<z.infer<z.ZodObject<Out>>>;
}

export function defineTool<In extends z.ZodRawShape, Out extends z.ZodRawShape>(spec: ToolSpec<In, Out>): ToolSpec<In, Out> {
  return Object.freeze(spec);
}
