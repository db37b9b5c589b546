/**
 * End-to-end harness: drives the REAL genaicode 0.9.5 ask-question dispatcher in a child
 * process with a scripted model (no network, no API key), and hands back what the model was
 * shown on every call.
 *
 *   const project = await createProject({ plugins: [myPlugin], explicitPrompt: '...', script: [
 *     askQuestion('plugin:runCommand', 'Running the tests'),
 *     expectCall('runCommand', { name: 'runCommand', args: { ... } }),
 *     askQuestion('endConversation', 'Done'),
 *   ] });
 *   const run = await runGenaicode(project);           // { exitCode, calls, report, ... }
 *   getSystemPrompt(run.calls[0]); getLastUserMessage(run.calls[1]);
 *   await project.cleanup();
 *
 * Files: run-genaicode.mjs (the child: one codegen iteration), scripted-ai.mjs (the
 * `plugin:scripted` AI service plugin), scenarios.ts (the plugin tests' scaffold on top of
 * this: the built plugin in one child per scenario, watched on the engine). Each run has its
 * own temp dir:
 *   <tmp>/project   the genaicode project: .genaicoderc (+ `files`). Nothing else, because
 *                   genaicode shows every .js/.ts/.json/.md file under rootDir to the model.
 *   <tmp>/harness   script.json, record.jsonl (one JSON line per model call), report.json,
 *                   cache/ (CACHE_DIR, where genaicode's find-cache-dir would write).
 *
 * HOST FACTS CONFIRMED against node_modules/genaicode/dist (genaicode 0.9.5), and relied on here:
 *
 * - Options: runCodegenIteration(options, abortSignal?, waitIfPaused?) in main/codegen.js takes
 *   CodegenOptions (main/codegen-types.d.ts). The option names used here exist as given:
 *   aiService, askQuestion, interactive, disableContextOptimization, historyEnabled,
 *   conversationSummaryEnabled, explicitPrompt. The ask-question loop runs when
 *   `askQuestion !== false && (interactive || ui)` (prompt/prompt-service.js).
 *   disableContextOptimization skips the summarization/optimization model calls,
 *   conversationSummaryEnabled=false skips the two summary calls (prompt/steps/
 *   step-generate-summary.js), historyEnabled=false skips the history update call.
 *   So the first model call is the forced askQuestion (requiredFunctionName 'askQuestion',
 *   modelType 'cheap', temperature = options.temperature).
 * - disableAiServiceFallback MUST be true (the runner sets it): otherwise, in interactive mode,
 *   a failing model call asks the confirm handler "Content generation failed, do you want to
 *   retry?" (prompt/ai-service-fallback.js) and a "yes" retries an exhausted script forever.
 *   The runner also always answers "no" to that question unless a scripted confirmation
 *   says otherwise.
 * - runCodegenIteration never rethrows a model or handler error: it reports it as a system
 *   message (main/codegen.js); executeStepAskQuestion catches any error of a model call or an
 *   action handler, puts "An error occurred: ..." and ends the loop returning []
 *   (prompt/steps/step-ask-question/step-ask-question.js). That is why the runner exits 3
 *   when the scripted model recorded an error: genaicode itself would exit 0.
 * - GenerateContentFunction returns Promise<FunctionCall[]>, FunctionCall = { id?, name, args? }
 *   (ai-service/common-types.d.ts). No text parts: a plain array of calls.
 * - The askQuestion args: { decisionMakingProcess, actionType, message }, all three required
 *   by the schema (prompt/function-defs/ask-question.js) and validated with jsonschema
 *   because requiredFunctionName is set (prompt/steps/step-validate-recover.js,
 *   prompt/function-calling-validate.js). actionType is an enum.
 * - Action types: 'endConversation' is the real name (handlers/handle-end-conversation.js);
 *   it asks askUserForConfirmationWithAnswer('Do you want to end the conversation?', ...)
 *   and ends the loop when confirmed. Plugin handlers become `plugin:<key>`
 *   (main/plugin-loader.js) and are looked up before built-ins; an unknown actionType
 *   falls back to sendMessage (ask-question-handler.js), which asks the input handler.
 * - Plugin action descriptions: appended as ` - plugin:<key>: <description>` to the
 *   description of askQuestion's actionType parameter, and `plugin:<key>` is in its enum
 *   (prompt/function-defs/ask-question.js). The enum (`actionTypeOptions`) is computed once
 *   when ask-question.js is first evaluated, after config.js has loaded the plugins.
 * - Plugin paths: loadPlugins (main/plugin-loader.js) does
 *   `path.isAbsolute(p) ? p : path.join(rcConfig.rootDir, p)` then `import(p)` and takes
 *   `.default`. Absolute paths are allowed (this harness uses them); relative ones are
 *   relative to rootDir, not to the .genaicoderc file or the cwd; bare package names are
 *   NOT resolved (they become rootDir/<name>).
 * - .genaicoderc: found by walking up from process.cwd() when main/config.js is first
 *   evaluated (main/config-lib.js findRcFile), so the runner chdirs before importing it.
 *   rootDir is resolved against the rc file's directory. If no rc is found and argv has
 *   --interactive or --ui, genaicode prompts on stdin: the runner keeps those out of argv.
 * - cli/cli-params.js parses process.argv at import time (main/codegen.js imports it); a
 *   positional argument becomes --task-file/--explicit-prompt, and without --ai-service it
 *   auto-detects a service from ANTHROPIC_API_KEY / OPENAI_API_KEY / GOOGLE_CLOUD_PROJECT /
 *   API_KEY (cli/service-autodetect.js). The runner resets argv to
 *   `--ai-service=plugin:scripted`; the harness also removes those keys from the child env
 *   so nothing could reach a real service.
 * - importantContext.systemPrompt is a string[] (main/config-schema.js), joined with '\n'
 *   under "# ADDITIONAL INSTRUCTIONS" by getSystemPrompt (prompt/systemprompt.js), which reads
 *   `rcConfig.importantContext` on every iteration (prompt/prompt-service.js passes rcConfig).
 *   Note: config.js's exported `importantContext` is a processed copy; mutate
 *   `rcConfig.importantContext`, not that one. The system prompt is asserted to be at most
 *   3500 estimated tokens (prompt/limits.js); the 0.9.5 base prompt in ask-question mode
 *   estimates at about 2190, so plugins share about 1300.
 * - A plugin-only function definition with requiredFunctionName set fails validation
 *   ("Function "x" is not defined."), genaicode retries once with 'cheap' and once with
 *   'default' and then throws AssertionError 'Recovery failed': 3 model calls, then an error.
 *   With requiredFunctionName null the result is returned unvalidated.
 * - Cache: main/common/cost-collector.js and files/cache-file.js write through
 *   find-cache-dir({ name: 'genaicode' }) (falls back to os.tmpdir()); find-cache-dir 5
 *   honours CACHE_DIR, so the harness sets CACHE_DIR to the run's harness dir.
 * - User interaction: the root 'genaicode' entry exports registerConfirmHandler,
 *   registerInputHandler (main/common/user-actions.js: confirm gets { prompt, confirmLabel,
 *   declineLabel, includeAnswer, defaultValue } and returns { confirmed, answer?, options? };
 *   input gets (prompt, message) and returns { answer, options? }) and
 *   registerContentHandler (main/common/content-bus.js), and imports nothing that loads
 *   config.js. Nothing starts a UI or server unless runCodegenUI is called.
 * - The abort controller is a `let` in main/common/abort-controller.js, null unless set;
 *   genaicode's interactive worker (main/interactive/codegen-worker.js) sets a new one per
 *   iteration and aborts it on SIGINT/SIGTERM. The runner does the same.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { chown, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { E2E_HOST } from './host.js';

export { E2E_HOST } from './host.js';

const HARNESS_DIR = path.dirname(fileURLToPath(import.meta.url));

/** Absolute path of the child entry point. */
export const RUNNER_PATH = path.join(HARNESS_DIR, 'run-genaicode.mjs');
/** Absolute path of the scripted AI service plugin (always loaded first by createProject). */
export const SCRIPTED_AI_PLUGIN_PATH = path.join(HARNESS_DIR, 'scripted-ai.mjs');

// ---------------------------------------------------------------------------------------
// Types (JSON shapes of genaicode 0.9.5, ai-service/common-types.d.ts; kept local so the
// harness type-checks without genaicode's declaration tree).

/** A JSON value, as recorded. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A model's function call: what GenerateContentFunction resolves to is FunctionCall[]. */
export interface ScriptedCall {
  id?: string;
  name: string;
  args?: Record<string, Json>;
}

/** A function definition offered to the model. */
export interface RecordedFunctionDef {
  name: string;
  description: string;
  parameters: {
    type: 'object';
    properties: Record<string, Json>;
    required: string[];
  };
}

/** One item of the prompt genaicode sends (PromptItem). */
export interface RecordedPromptItem {
  itemId?: string;
  type: 'systemPrompt' | 'user' | 'assistant';
  systemPrompt?: string;
  text?: string;
  functionResponses?: Array<{ call_id?: string; name: string; content?: string; isError?: boolean }>;
  functionCalls?: ScriptedCall[];
  images?: Array<{ mediaType: string; base64url: string }>;
  cache?: boolean;
}

/** The matcher form of a script entry: every `expect*` is checked, a mismatch throws. */
export interface ScriptMatcher {
  /** Function name(s) that must be among the offered function definitions. */
  expectFunction?: string | string[];
  /** The requiredFunctionName genaicode must pass (null: none). */
  expectRequiredFunction?: string | null;
  /** 'default' | 'cheap' | 'reasoning' in 0.9.5. */
  expectModelType?: string;
  /** Text that must appear somewhere in the prompt (system prompt, texts, function I/O). */
  expectPromptIncludes?: string | string[];
  /** Shown in error messages. */
  label?: string;
  /** The answer: one call, ... */
  call?: ScriptedCall;
  /** ... several calls (or [] for none), ... */
  calls?: ScriptedCall[];
  /** ... or a simulated service failure (thrown; not counted as a harness failure). */
  error?: string;
}

/**
 * One model call's answer. A plain call is answered as [call]; an array as is; a matcher
 * checks what it was sent first.
 */
export type ScriptEntry = ScriptedCall | ScriptedCall[] | ScriptMatcher | { text: string };

/** One recorded model call (one line of record.jsonl, written by scripted-ai.mjs). */
export interface RecordedCall {
  /** 0-based call number. */
  index: number;
  /** The script entry consumed (null when the script was exhausted). */
  entryIndex: number | null;
  /** How the host called the model: 0.9.5's positional arguments or 1.x's config object. */
  convention: 'positional' | 'config';
  /** 1.x: the kinds of answer the caller expects ({ functionCall, text, ... }). */
  expectedResponseType?: Record<string, Json>;
  /** The text answered instead of a call (a `{ text }` script entry). */
  answerText?: string;
  requiredFunctionName: string | null;
  /** 'default' | 'cheap' | 'reasoning' (ModelType), or null when not passed. */
  modelType: string | null;
  temperature: number;
  functionDefNames: string[];
  functionDefs: RecordedFunctionDef[];
  /** A snapshot of the prompt at call time. */
  prompt: RecordedPromptItem[];
  /** The CodegenOptions passed along, if any. */
  options: Record<string, Json> | null;
  /** The calls returned to genaicode. */
  answer?: ScriptedCall[];
  /** Why the call threw. */
  error?: string;
  /** True when the throw was a scripted `error` entry. */
  simulated?: boolean;
}

/** A scripted answer to a confirmation question. */
export interface ConfirmAnswer {
  confirmed: boolean;
  /** Free-text answer (askUserForConfirmationWithAnswer). */
  answer?: string;
  /** If set, the question must contain this text (else the run fails with exit code 3). */
  promptIncludes?: string;
}

export interface CreateProjectOptions {
  /** Plugin files to load after the scripted AI plugin: absolute, or './' paths in the project. */
  plugins: string[];
  /** The model's answers, one per model call. */
  script: ScriptEntry[];
  /** The user's prompt for the iteration. */
  explicitPrompt: string;
  /** Default answer to confirmations (default: yes). */
  confirm?: boolean | 'yes' | 'no';
  /** Answers consumed in order before the default applies. */
  confirmations?: ConfirmAnswer[];
  /** Answers to askUserForInput (e.g. the sendMessage action), in order. */
  inputs?: string[];
  /** Answer once `inputs` is used up; without it, an unscripted input fails the run. */
  defaultInput?: string;
  /** Files to create in the project, relative path -> content. The model sees them. */
  files?: Record<string, string>;
  /** Extra .genaicoderc keys (rootDir and plugins are set by the harness). */
  rc?: Record<string, Json>;
  /** CodegenOptions overrides for runCodegenIteration. */
  options?: Record<string, Json>;
  /** Where to make the temp dir (default: os.tmpdir()). */
  tmpRoot?: string;
  /** Hand the project folder and its files to this user (a root test run standing in for a developer). */
  owner?: { uid: number; gid: number };
}

export interface Project {
  /** The temp dir holding both of the below. */
  readonly dir: string;
  /** genaicode's project and rootDir (holds .genaicoderc). */
  readonly projectDir: string;
  readonly harnessDir: string;
  /** The child's XDG_STATE_HOME: genaicode-docker's logs go under it, outside the project. */
  readonly stateDir: string;
  /** Where genaicode-docker writes its logs by default (stateDir/genaicode-docker/logs). */
  readonly logsDir: string;
  readonly rcPath: string;
  readonly scriptPath: string;
  readonly recordPath: string;
  readonly reportPath: string;
  readonly scriptLength: number;
  /** Removes the temp dir (kept when KEEP_E2E_TMP=1). */
  cleanup(): Promise<void>;
}

/** The JSON report written by run-genaicode.mjs when the child ends on its own. */
export interface RunReport {
  projectDir: string;
  exitCode: number;
  durationMs: number;
  signal: string | null;
  thrown: { name: string; message: string; stack?: string } | string | null;
  /** What runCodegenIteration resolved to. */
  result: Json;
  /** Harness failures: unscripted input, unmatched confirmation. */
  harnessErrors: string[];
  /** Non-simulated errors the scripted model threw (exhausted, matcher mismatch). */
  scriptErrors: string[];
  /** Everything genaicode put on its content bus (chat messages). */
  messages: Array<{ type: 'user' | 'assistant' | 'system'; content: string; data?: Json }>;
  confirmations: Array<{
    prompt: string;
    confirmLabel: string;
    declineLabel: string;
    includeAnswer: boolean;
    defaultValue: boolean;
    response: { confirmed: boolean; answer?: string };
  }>;
  inputs: Array<{ prompt: string; message: string; answer: string | null }>;
  options: Record<string, Json> | null;
  genaicode: { root: string; version: string } | null;
}

export interface RunOptions {
  /** Kill the child with SIGKILL after this long (default 60 s). */
  timeoutMs?: number;
  /** Extra environment for the child; undefined removes a variable. */
  env?: Record<string, string | undefined>;
}

export interface RunResult {
  /** 0 ok; 1 genaicode threw; 2 usage; 3 script/harness failure; 128+n aborted by signal. */
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  calls: RecordedCall[];
  /** null when the child died before writing it (SIGKILL, timeout). */
  report: RunReport | null;
  timedOut: boolean;
  durationMs: number;
  /** Script entries never consumed. */
  unusedScriptEntries: number;
}

/** The spawned child, plus helpers. `result` never rejects. */
export type GenaicodeProcess = ChildProcess & {
  readonly project: Project;
  readonly result: Promise<RunResult>;
  stdoutText(): string;
  stderrText(): string;
  /** Resolves when stdout+stderr contain the text; rejects on timeout or exit. */
  waitForOutput(text: string | RegExp, timeoutMs?: number): Promise<void>;
  /** Resolves with the recorded calls once there are at least `count`. */
  waitForCalls(count: number, timeoutMs?: number): Promise<RecordedCall[]>;
};

// ---------------------------------------------------------------------------------------
// Script builders

/** The dispatcher call genaicode forces on every turn of its loop (askQuestion in 0.9.5, iterate in 1.x). */
export function askQuestion(actionType: string, message: string, decisionMakingProcess = `Scripted decision: ${actionType}`): ScriptedCall {
  return { name: E2E_HOST.dispatcher, args: { decisionMakingProcess, actionType, message } };
}

/** A plain function call answer. */
export function functionCall(name: string, args: Record<string, Json> = {}): ScriptedCall {
  return { name, args };
}

/** A matcher: fails loudly unless `expectFunction` is among the offered definitions. */
export function expectCall(
  expectFunction: string | string[],
  call: ScriptedCall,
  more: Omit<ScriptMatcher, 'expectFunction' | 'call' | 'calls' | 'error'> = {},
): ScriptMatcher {
  return { ...more, expectFunction, call };
}

// ---------------------------------------------------------------------------------------
// Project and runs

/** Makes the temp project (.genaicoderc, files) and the run script. */
async function chownTree(dir: string, owner: { uid: number; gid: number }): Promise<void> {
  await chown(dir, owner.uid, owner.gid);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) await chownTree(p, owner);
    else await chown(p, owner.uid, owner.gid);
  }
}

export async function createProject(options: CreateProjectOptions): Promise<Project> {
  for (const plugin of options.plugins) {
    // Absolute, or relative to the project as a user writes it ('./node_modules/...': the
    // only relative form 1.x takes from the project).
    if (!path.isAbsolute(plugin) && !plugin.startsWith('./')) {
      throw new Error(`createProject: plugin paths must be absolute or start with ./, got ${plugin}`);
    }
  }
  const dir = await mkdtemp(path.join(options.tmpRoot ?? os.tmpdir(), 'genaicode-e2e-'));
  const projectDir = path.join(dir, 'project');
  const harnessDir = path.join(dir, 'harness');
  await mkdir(projectDir);
  await mkdir(harnessDir);

  const rcPath = path.join(projectDir, '.genaicoderc');
  const rc: Record<string, Json> = {
    ...(options.rc ?? {}),
    rootDir: '.',
    plugins: [SCRIPTED_AI_PLUGIN_PATH, ...options.plugins],
  };
  await writeFile(rcPath, JSON.stringify(rc, null, 2));
  for (const [relative, content] of Object.entries(options.files ?? {})) {
    const target = path.resolve(projectDir, relative);
    if (!target.startsWith(projectDir + path.sep)) {
      throw new Error(`createProject: file ${relative} is outside the project`);
    }
    await mkdir(path.dirname(target), { recursive: true });
    await writeFile(target, content);
  }
  if (options.owner) await chownTree(projectDir, options.owner);

  const scriptPath = path.join(harnessDir, 'script.json');
  const run: Record<string, unknown> = {
    explicitPrompt: options.explicitPrompt,
    model: options.script,
    confirm: options.confirm ?? true,
    confirmations: options.confirmations ?? [],
    inputs: options.inputs ?? [],
    ...(options.defaultInput !== undefined ? { defaultInput: options.defaultInput } : {}),
    ...(options.options ? { options: options.options } : {}),
  };
  await writeFile(scriptPath, JSON.stringify(run, null, 2));

  const stateDir = path.join(dir, 'state');
  return {
    dir,
    projectDir,
    harnessDir,
    stateDir,
    logsDir: path.join(stateDir, 'genaicode-docker', 'logs'),
    rcPath,
    scriptPath,
    recordPath: path.join(harnessDir, 'record.jsonl'),
    reportPath: path.join(harnessDir, 'report.json'),
    scriptLength: options.script.length,
    async cleanup() {
      if (process.env.KEEP_E2E_TMP === '1') return;
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The recorded model calls so far (tolerates a half-written last line). */
export function readRecordedCalls(project: Project): RecordedCall[] {
  if (!existsSync(project.recordPath)) return [];
  const calls: RecordedCall[] = [];
  for (const line of readFileSync(project.recordPath, 'utf-8').split('\n')) {
    if (!line.trim()) continue;
    try {
      calls.push(JSON.parse(line) as RecordedCall);
    } catch {
      // A line being written while we read: the next read gets it.
    }
  }
  return calls;
}

/** The runner's report, or null if it has not been written. */
export function readReport(project: Project): RunReport | null {
  if (!existsSync(project.reportPath)) return null;
  try {
    return JSON.parse(readFileSync(project.reportPath, 'utf-8')) as RunReport;
  } catch {
    return null;
  }
}

/** Variables that would let genaicode pick (or reach) a real AI service. */
const SCRUBBED_ENV = [
  'ANTHROPIC_API_KEY',
  'OPENAI_API_KEY',
  'OPENAI_BASE_URL',
  'API_KEY',
  'GOOGLE_CLOUD_PROJECT',
  'GOOGLE_CLOUD_REGION',
  'GOOGLE_APPLICATION_CREDENTIALS',
];

function childEnv(project: Project, extra: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const key of SCRUBBED_ENV) delete env[key];
  // jest runs with --experimental-vm-modules; the child needs no flags.
  delete env.NODE_OPTIONS;
  Object.assign(env, {
    GENAICODE_HOST_ROOT: E2E_HOST.root,
    SCRIPTED_AI_SCRIPT: project.scriptPath,
    SCRIPTED_AI_RECORD: project.recordPath,
    HARNESS_REPORT: project.reportPath,
    // genaicode's usage/summary cache (find-cache-dir honours CACHE_DIR): keep it per run.
    CACHE_DIR: path.join(project.harnessDir, 'cache'),
    // The plugin's default log folder (outside the project) is kept per run too.
    XDG_STATE_HOME: project.stateDir,
    NO_COLOR: '1',
    FORCE_COLOR: '0',
  });
  for (const [key, value] of Object.entries(extra)) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  return env;
}

const liveChildren = new Set<ChildProcess>();
let exitHookInstalled = false;
function track(child: ChildProcess): void {
  liveChildren.add(child);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', () => {
      for (const c of liveChildren) c.kill('SIGKILL');
    });
  }
}

/** Spawns the child (stdin ignored) and returns it at once. */
export function startGenaicode(project: Project, options: RunOptions = {}): GenaicodeProcess {
  const timeoutMs = options.timeoutMs ?? 60_000;
  const startedAt = Date.now();
  const child = spawn(process.execPath, [RUNNER_PATH, project.projectDir], {
    cwd: project.projectDir,
    env: childEnv(project, options.env ?? {}),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  track(child);

  let stdout = '';
  let stderr = '';
  const outputListeners = new Set<() => void>();
  child.stdout?.setEncoding('utf-8');
  child.stderr?.setEncoding('utf-8');
  child.stdout?.on('data', (chunk: string) => {
    stdout += chunk;
    for (const listener of outputListeners) listener();
  });
  child.stderr?.on('data', (chunk: string) => {
    stderr += chunk;
    for (const listener of outputListeners) listener();
  });

  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    stderr += `\n[harness] timed out after ${timeoutMs} ms: SIGKILL\n`;
    child.kill('SIGKILL');
  }, timeoutMs);

  let exited = false;
  const result = new Promise<RunResult>((resolve) => {
    let settled = false;
    const settle = (exitCode: number | null, signal: NodeJS.Signals | null): void => {
      if (settled) return;
      settled = true;
      exited = true;
      clearTimeout(timer);
      liveChildren.delete(child);
      for (const listener of outputListeners) listener();
      const calls = readRecordedCalls(project);
      const consumed = calls.filter((c) => c.entryIndex !== null).length;
      resolve({
        exitCode,
        signal,
        stdout,
        stderr,
        calls,
        report: readReport(project),
        timedOut,
        durationMs: Date.now() - startedAt,
        unusedScriptEntries: Math.max(0, project.scriptLength - consumed),
      });
    };
    child.once('error', (error) => {
      stderr += `\n[harness] spawn failed: ${error.message}\n`;
      settle(null, null);
    });
    // 'close' fires after the stdio streams are drained.
    child.once('close', (code, signal) => settle(code, signal));
  });

  const waitUntil = <T>(check: () => T | undefined, what: string, waitMs: number): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const cleanup = (): void => {
        clearTimeout(deadline);
        clearInterval(poll);
        outputListeners.delete(onChange);
      };
      const onChange = (): void => {
        const value = check();
        if (value !== undefined) {
          cleanup();
          resolve(value);
        } else if (exited) {
          cleanup();
          reject(new Error(`genaicode exited before ${what}\n--- stderr ---\n${stderr.slice(-4000)}`));
        }
      };
      const deadline = setTimeout(() => {
        cleanup();
        reject(new Error(`timed out after ${waitMs} ms waiting for ${what}`));
      }, waitMs);
      // The record file is written by the child without any output: poll it too.
      const poll = setInterval(onChange, 50);
      outputListeners.add(onChange);
      onChange();
    });

  const extras = {
    project,
    result,
    stdoutText: () => stdout,
    stderrText: () => stderr,
    waitForOutput: (text: string | RegExp, waitMs = 30_000): Promise<void> =>
      waitUntil(
        () => {
          const all = stdout + stderr;
          const found = typeof text === 'string' ? all.includes(text) : text.test(all);
          return found ? true : undefined;
        },
        `output ${String(text)}`,
        waitMs,
      ).then(() => undefined),
    waitForCalls: (count: number, waitMs = 30_000): Promise<RecordedCall[]> =>
      waitUntil(
        () => {
          const calls = readRecordedCalls(project);
          return calls.length >= count ? calls : undefined;
        },
        `${count} recorded model call(s)`,
        waitMs,
      ),
  };
  return Object.assign(child, extras);
}

/** Runs one iteration to the end. Never rejects: look at exitCode / report / stderr. */
export function runGenaicode(project: Project, options: RunOptions = {}): Promise<RunResult> {
  return startGenaicode(project, options).result;
}

/** A one-line summary for assertion messages. */
export function describeRun(run: RunResult): string {
  const errors = [...(run.report?.scriptErrors ?? []), ...(run.report?.harnessErrors ?? [])];
  return (
    `exitCode=${String(run.exitCode)} signal=${String(run.signal)} timedOut=${String(run.timedOut)} ` +
    `calls=${run.calls.length} unused=${run.unusedScriptEntries}` +
    (errors.length > 0 ? `\nerrors:\n  ${errors.join('\n  ')}` : '') +
    `\n--- stderr (tail) ---\n${run.stderr.slice(-3000)}`
  );
}

// ---------------------------------------------------------------------------------------
// Reading what the model was shown

/** The system prompt of a recorded call. */
export function getSystemPrompt(call: RecordedCall): string | undefined {
  return call.prompt.find((item) => item.type === 'systemPrompt')?.systemPrompt;
}

/** The last user item of a recorded call's prompt. */
export function getLastUserItem(call: RecordedCall): RecordedPromptItem | undefined {
  for (let i = call.prompt.length - 1; i >= 0; i--) {
    const item = call.prompt[i];
    if (item?.type === 'user') return item;
  }
  return undefined;
}

/** The text of the last user message (its function responses' content appended). */
export function getLastUserMessage(call: RecordedCall): string | undefined {
  const item = getLastUserItem(call);
  if (!item) return undefined;
  const parts = [item.text ?? '', ...(item.functionResponses ?? []).map((r) => r.content ?? '')];
  return parts.filter((p) => p !== '').join('\n');
}

/** { systemPrompt, lastUserMessage } of a recorded call. */
export function promptParts(call: RecordedCall): { systemPrompt: string | undefined; lastUserMessage: string | undefined } {
  return { systemPrompt: getSystemPrompt(call), lastUserMessage: getLastUserMessage(call) };
}

/** Everything the model could read in the prompt, as one string. */
export function promptText(call: RecordedCall): string {
  const parts: string[] = [];
  for (const item of call.prompt) {
    if (item.systemPrompt) parts.push(item.systemPrompt);
    if (item.text) parts.push(item.text);
    for (const response of item.functionResponses ?? []) {
      if (response.content) parts.push(response.content);
    }
    for (const fc of item.functionCalls ?? []) parts.push(JSON.stringify(fc));
  }
  return parts.join('\n');
}

/** A function definition offered in a recorded call. */
export function getFunctionDef(call: RecordedCall, name: string): RecordedFunctionDef | undefined {
  return call.functionDefs.find((def) => def.name === name);
}

/** The actionType enum and description of the dispatcher's definition offered (askQuestion or iterate). */
export function getAskQuestionActionTypes(call: RecordedCall): { enum: string[]; description: string } | undefined {
  const actionType = getFunctionDef(call, E2E_HOST.dispatcher)?.parameters.properties['actionType'];
  if (typeof actionType !== 'object' || actionType === null || Array.isArray(actionType)) return undefined;
  const values = actionType['enum'];
  const description = actionType['description'];
  return {
    enum: Array.isArray(values) ? values.filter((v): v is string => typeof v === 'string') : [],
    description: typeof description === 'string' ? description : '',
  };
}
