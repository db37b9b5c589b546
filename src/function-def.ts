import { z } from 'zod/v4';

/**
 * Functions a model may call, each specified once: the zod schema that validates its
 * arguments is also where its definition (the JSON Schema the model reads) comes from.
 */

/** A function a model may call: its name, what it does, its parameters as JSON Schema. */
export interface FunctionDef {
  name: string;
  description: string;
  parameters: { type: 'object'; properties: Record<string, unknown>; required: string[] };
}

/** A call a model made: the function's name and its arguments. */
export interface FunctionCall<T = Record<string, unknown>> {
  id?: string;
  name: string;
  args?: T;
}

/** JSON Schema keywords every model service takes in a function definition; the rest is dropped. */
const PORTABLE = new Set([
  'type',
  'description',
  'properties',
  'required',
  'items',
  'enum',
  'minimum',
  'maximum',
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
]);

function portable(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(portable);
  if (typeof node !== 'object' || node === null) return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node as Record<string, unknown>)) {
    if (key === 'properties')
      out[key] = Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, portable(v)]));
    else if (key === 'exclusiveMinimum' && typeof value === 'number')
      out.minimum = (node as { type?: string }).type === 'integer' ? value + 1 : value;
    else if (PORTABLE.has(key)) out[key] = portable(value);
  }
  return out;
}

/**
 * The definition of a function whose arguments `schema` validates. Field descriptions come
 * from the schema's `.describe()`; `notes` appends what depends on the configuration
 * (a default, a limit) to a field's description.
 */
export function functionDef(name: string, description: string, schema: z.ZodObject, notes: Record<string, string> = {}): FunctionDef {
  // unrepresentable: 'any' is zod's option name (a type JSON Schema cannot say becomes {}), not a TypeScript any.
  const json = portable(z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' })) as {
    properties?: Record<string, { description?: string }>;
    required?: string[];
  };
  const properties = json.properties ?? {};
  for (const [field, note] of Object.entries(notes)) {
    const p = properties[field];
    if (p) p.description = p.description ? `${p.description} (${note})` : note;
  }
  return { name, description, parameters: { type: 'object', properties, required: json.required ?? [] } };
}

/** `image, name?`: the argument list of a schema, optional ones marked. */
export function argumentList(schema: z.ZodObject): string {
  return Object.entries(schema.shape)
    .map(([k, v]) => `${k}${(v as z.ZodType).safeParse(undefined).success ? '?' : ''}`)
    .join(', ');
}

/** A problem in a model's words: a missing field is `Required`, a wrong type `Expected string, received array`. */
export function issueMessage(issue: z.core.$ZodIssue): string {
  const m = issue.code === 'invalid_type' ? /expected (\S+), received (\S+)/.exec(issue.message) : null;
  if (!m) return issue.message;
  return m[2] === 'undefined' ? 'Required' : `Expected ${m[1]}, received ${m[2]}`;
}

/** One line per problem: `field: message`. */
export function describeIssues(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.join('.') || 'arguments'}: ${issueMessage(i)}`).join('; ');
}
