/**
 * An MCP tool argument derived from a field of one of the model's shapes (the task request, a
 * schedule): its JSON Schema and its check are the field's, and only MCP's side is added — the
 * argument's snake_case name, JSON text accepted for objects, a unit (seconds for milliseconds), a
 * narrower type, its description. A problem is the field's one line, naming the MCP argument. The
 * SDK publishes and checks the result like any zod argument; the parsed value is already the field's.
 */
import * as z from 'zod';
import * as zm from 'zod/mini';
import { firstProblem } from '../model/shapes.js';

/** JSON text of an object or array, parsed (a CLI that reads `input={"path":"."}` as a string); other values as they are. */
function parsedJsonText(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value) as unknown;
  } catch {
    return value;
  }
}

/** MCP's side of one argument. */
export interface ArgumentMapping {
  description: string;
  /** The client may send the value as JSON text. */
  json?: boolean;
  /** The argument's unit is this many of the field's (seconds: 1000 ms). */
  scale?: number;
  /** A narrower type than the field's, checked first: its JSON Schema and its one-line message. */
  narrower?: { schema: zm.ZodMiniType; jsonSchema: Record<string, unknown>; message: string };
}

/** The JSON Schema a client sees of a field (the field's own, without `$schema`). */
function fieldJsonSchema(schema: zm.ZodMiniType): Record<string, unknown> {
  const { $schema: _, ...json } = zm.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  return json;
}

/** The optional argument `name` from `field`: checked by the field's schema, its message naming the argument. */
export function derivedArgument<O>(name: string, field: zm.ZodMiniType<O>, mapping: ArgumentMapping) {
  const json = mapping.narrower?.jsonSchema ?? fieldJsonSchema(field);
  return z
    .unknown()
    .transform((raw, ctx): NonNullable<O> => {
      const value = mapping.json ? parsedJsonText(raw) : raw;
      if (mapping.narrower && !zm.safeParse(mapping.narrower.schema, value).success) {
        ctx.issues.push({ code: 'custom', input: raw, message: mapping.narrower.message });
        return z.NEVER;
      }
      const scaled = mapping.scale !== undefined && typeof value === 'number' ? Math.round(value * mapping.scale) : value;
      const parsed = zm.safeParse(field, scaled);
      if (!parsed.success) {
        ctx.issues.push({ code: 'custom', input: raw, message: firstProblem(parsed.error, name) });
        return z.NEVER;
      }
      return parsed.data as NonNullable<O>;
    })
    .optional()
    .meta({ ...json, description: mapping.description });
}
