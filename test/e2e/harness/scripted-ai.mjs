/**
 * A genaicode plugin (0.9.5 or 1.x) that provides a scripted AI service, `plugin:scripted`.
 *
 * No network, no API key: every call to `generateContent` takes the next entry of a JSON
 * script and answers with it, and appends one JSON line describing the call to a record
 * file, so a test can assert exactly what the model was shown.
 *
 * Environment:
 *   SCRIPTED_AI_SCRIPT  path of the script file (required). Either a JSON array of entries,
 *                       or an object with a `model` array (the harness writes the latter,
 *                       the same file also holds the runner's prompt and user answers).
 *   SCRIPTED_AI_RECORD  path of the JSON-lines record file (optional; no record without it).
 *
 * GenerateContentFunction in 0.9.5 (dist/ai-service/common-types.d.ts):
 *   (prompt: PromptItem[], functionDefs: FunctionDef[], requiredFunctionName: string | null,
 *    temperature: number, modelType?: ModelType, options?) => Promise<FunctionCall[]>
 * where FunctionCall is `{ id?: string; name: string; args?: Record<string, unknown> }`.
 * In 1.x (0.10 and later): (prompt, config: { modelType, temperature, functionDefs,
 * requiredFunctionName, expectedResponseType, ... }, options) => Promise<parts>, a part being
 * `{ type: 'functionCall', functionCall }` or `{ type: 'text', text }`. The service answers in
 * the form it was called in, and records both alike (plus `convention`). An entry
 * `{ "text": "..." }` answers with text instead of a call (1.x only; 0.9.5 drops text).
 *
 * Script entries (one per model call, consumed in order):
 *   { "name": "askQuestion", "args": {...} }           answered as [that call]
 *   [ { "name": ..., "args": ... }, ... ]               answered as that array (may be [])
 *   { "expectFunction": "x" | ["x", "y"],              a matcher: every `expect*` is checked
 *     "expectRequiredFunction": "askQuestion" | null,   against the call; on mismatch the call
 *     "expectModelType": "cheap",                       throws a clear error (and records it)
 *     "expectPromptIncludes": "text" | ["a", "b"],
 *     "label": "free text for messages",
 *     "call": {...} | "calls": [...] | "error": "msg" } `error` simulates a failing service
 *
 * When the script runs out the call throws `scripted model: script exhausted at call N`.
 * Errors are recorded with `error` (and `simulated: true` for an `error` entry); the runner
 * turns non-simulated errors into a non-zero exit code, because genaicode itself swallows
 * errors thrown inside its ask-question loop.
 */
import fs from 'node:fs';

const scriptPath = process.env.SCRIPTED_AI_SCRIPT;
const recordPath = process.env.SCRIPTED_AI_RECORD;

/** @type {unknown[] | null} */
let script = null;
let nextEntry = 0;
let callCount = 0;

function loadScript() {
  if (script) return script;
  if (!scriptPath) {
    throw new Error('scripted model: SCRIPTED_AI_SCRIPT is not set');
  }
  const parsed = JSON.parse(fs.readFileSync(scriptPath, 'utf-8'));
  const entries = Array.isArray(parsed) ? parsed : parsed?.model;
  if (!Array.isArray(entries)) {
    throw new Error(`scripted model: ${scriptPath} holds neither an array nor an object with a "model" array`);
  }
  script = entries;
  return script;
}

function record(line) {
  if (!recordPath) return;
  // Synchronous, one line per call: a test that kills the process mid-run still sees every
  // call made so far.
  fs.appendFileSync(recordPath, JSON.stringify(line) + '\n', 'utf-8');
}

function isPlainObject(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function validateCall(call, where) {
  if (!isPlainObject(call) || typeof call.name !== 'string') {
    throw new Error(`scripted model: ${where}: a scripted function call needs a string "name", got ${JSON.stringify(call)}`);
  }
  return call;
}

/** All the text a model would read in a prompt (for expectPromptIncludes). */
function promptText(prompt) {
  const parts = [];
  for (const item of prompt ?? []) {
    if (item.systemPrompt) parts.push(item.systemPrompt);
    if (item.text) parts.push(item.text);
    for (const response of item.functionResponses ?? []) {
      if (response.content) parts.push(response.content);
    }
    for (const call of item.functionCalls ?? []) {
      parts.push(JSON.stringify(call));
    }
  }
  return parts.join('\n');
}

class SimulatedServiceError extends Error {}

/**
 * Works out the answer for one entry, or throws a clear error.
 * @returns {Array<{ id?: string, name: string, args?: Record<string, unknown> }>}
 */
function answerFor(entry, entryIndex, callIndex, ctx) {
  const where = `call ${callIndex} (script entry ${entryIndex}${isPlainObject(entry) && entry.label ? `, "${entry.label}"` : ''})`;
  if (Array.isArray(entry)) {
    return entry.map((call) => validateCall(call, where));
  }
  if (isPlainObject(entry) && typeof entry.text === 'string' && entry.name === undefined) {
    return { text: entry.text };
  }
  if (!isPlainObject(entry)) {
    throw new Error(`scripted model: ${where}: entry must be an object or an array, got ${JSON.stringify(entry)}`);
  }
  if (typeof entry.name === 'string') {
    return [validateCall(entry, where)];
  }
  // Matcher form.
  if (entry.expectFunction !== undefined) {
    const expected = Array.isArray(entry.expectFunction) ? entry.expectFunction : [entry.expectFunction];
    const missing = expected.filter((name) => !ctx.functionDefNames.includes(name));
    if (missing.length > 0) {
      throw new Error(
        `scripted model: ${where}: expected function definition(s) ${JSON.stringify(missing)} to be offered, ` +
          `but the model was offered ${JSON.stringify(ctx.functionDefNames)}`,
      );
    }
  }
  if (entry.expectRequiredFunction !== undefined && entry.expectRequiredFunction !== ctx.requiredFunctionName) {
    throw new Error(
      `scripted model: ${where}: expected requiredFunctionName ${JSON.stringify(entry.expectRequiredFunction)}, ` +
        `got ${JSON.stringify(ctx.requiredFunctionName)}`,
    );
  }
  if (entry.expectModelType !== undefined && entry.expectModelType !== ctx.modelType) {
    throw new Error(
      `scripted model: ${where}: expected modelType ${JSON.stringify(entry.expectModelType)}, got ${JSON.stringify(ctx.modelType)}`,
    );
  }
  if (entry.expectPromptIncludes !== undefined) {
    const wanted = Array.isArray(entry.expectPromptIncludes) ? entry.expectPromptIncludes : [entry.expectPromptIncludes];
    const text = promptText(ctx.prompt);
    const missing = wanted.filter((needle) => !text.includes(needle));
    if (missing.length > 0) {
      throw new Error(`scripted model: ${where}: expected the prompt to include ${JSON.stringify(missing)}`);
    }
  }
  if (typeof entry.error === 'string') {
    throw new SimulatedServiceError(entry.error);
  }
  if (entry.calls !== undefined) {
    if (!Array.isArray(entry.calls)) {
      throw new Error(`scripted model: ${where}: "calls" must be an array`);
    }
    return entry.calls.map((call) => validateCall(call, where));
  }
  if (entry.call !== undefined) {
    return [validateCall(entry.call, where)];
  }
  throw new Error(`scripted model: ${where}: a matcher entry needs "call", "calls" or "error"`);
}

/**
 * Both conventions: (prompt, functionDefs, requiredFunctionName, temperature, modelType,
 * options) in 0.9.5; (prompt, config, options) in 1.x.
 */
async function generateContent(prompt, ...rest) {
  const positional = Array.isArray(rest[0]);
  const [functionDefs, requiredFunctionName, temperature, modelType, options, expectedResponseType] = positional
    ? [rest[0], rest[1], rest[2], rest[3], rest[4], undefined]
    : [
        rest[0]?.functionDefs,
        rest[0]?.requiredFunctionName,
        rest[0]?.temperature,
        rest[0]?.modelType,
        rest[1],
        rest[0]?.expectedResponseType,
      ];
  const index = callCount++;
  const functionDefNames = (functionDefs ?? []).map((def) => def.name);
  const base = {
    index,
    entryIndex: null,
    convention: positional ? 'positional' : 'config',
    requiredFunctionName: requiredFunctionName ?? null,
    modelType: modelType ?? null,
    temperature,
    functionDefNames,
    functionDefs: functionDefs ?? [],
    prompt,
    options: options ?? null,
    ...(expectedResponseType !== undefined ? { expectedResponseType } : {}),
  };
  let entries;
  try {
    entries = loadScript();
  } catch (error) {
    record({ ...base, error: error instanceof Error ? error.message : String(error) });
    throw error;
  }
  if (nextEntry >= entries.length) {
    const error = new Error(`scripted model: script exhausted at call ${index}`);
    record({ ...base, error: error.message });
    throw error;
  }
  const entryIndex = nextEntry++;
  try {
    const answer = answerFor(entries[entryIndex], entryIndex, index, {
      functionDefNames,
      requiredFunctionName: requiredFunctionName ?? null,
      modelType: modelType ?? null,
      prompt,
    });
    const text = Array.isArray(answer) ? undefined : answer.text;
    const calls = Array.isArray(answer) ? answer : [];
    record({ ...base, entryIndex, answer: calls, ...(text !== undefined ? { answerText: text } : {}) });
    // A deep copy: genaicode may mutate the calls it receives.
    const copy = JSON.parse(JSON.stringify(calls));
    if (positional) return copy;
    return text !== undefined ? [{ type: 'text', text }] : copy.map((functionCall) => ({ type: 'functionCall', functionCall }));
  } catch (error) {
    const simulated = error instanceof SimulatedServiceError;
    record({ ...base, entryIndex, error: error instanceof Error ? error.message : String(error), simulated });
    if (simulated) {
      throw new Error(error.message);
    }
    throw error;
  }
}

export default {
  name: 'scripted-ai',
  aiServices: {
    scripted: {
      serviceConfig: { modelOverrides: {} },
      generateContent,
    },
  },
};
