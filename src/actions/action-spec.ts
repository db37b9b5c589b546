import type { z } from 'zod/v4';
import type { Config } from '../config/config-schema.js';
import { argumentList, functionDef, type FunctionDef } from '../function-def.js';

/**
 * One plugin action, specified once. Its zod schema validates the model's arguments and is
 * also where the function definition the model fills in comes from (function-def.ts), and
 * the line in askQuestion's action list names the same arguments.
 */
export interface ActionSpec<S extends z.ZodObject = z.ZodObject> {
  /** The action is `plugin:<name>`; its function has the same name. */
  name: string;
  /** What it does, in one sentence. */
  description: string;
  /** The answer's shape, e.g. `{ id, name, status }`. */
  returns: string;
  /** One more sentence for the action list (a caution, a habit). */
  note?: string;
  args: S;
  /** Field descriptions that depend on the configuration: a default, a limit. */
  configNotes?: (config: Config) => Record<string, string>;
}

export function defineActionSpec<S extends z.ZodObject>(spec: ActionSpec<S>): ActionSpec<S> {
  return spec;
}

/** The function definition the model fills in for this action. */
export function actionFunctionDef(spec: ActionSpec, config: Config): FunctionDef {
  return functionDef(spec.name, spec.description, spec.args, spec.configNotes?.(config));
}

/** The action's line in askQuestion's action list, shown on every turn. */
export function actionListLine(spec: ActionSpec): string {
  return `${spec.description.replace(/\.$/, '')} (args: ${argumentList(spec.args)}). Returns ${spec.returns}.${spec.note ? ` ${spec.note}` : ''}`;
}
