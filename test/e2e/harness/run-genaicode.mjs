#!/usr/bin/env node
/**
 * Runs ONE real genaicode codegen iteration in its dispatcher loop (askQuestion in 0.9.5,
 * iterate in 1.x), headless, in a project directory, with the scripted model
 * (`scripted-ai.mjs`, `plugin:scripted`).
 *
 *   node test/e2e/harness/run-genaicode.mjs <projectDir>
 *
 * Environment:
 *   GENAICODE_HOST_ROOT the genaicode package to run (its folder); default: the one in this
 *                       repository's node_modules (0.9.5)
 *   SCRIPTED_AI_SCRIPT  the run script (JSON object, written by harness.ts):
 *                       { explicitPrompt: string, model: ScriptEntry[],
 *                         confirm?: boolean | 'yes' | 'no', confirmations?: ConfirmAnswer[],
 *                         inputs?: string[], defaultInput?: string,
 *                         options?: Record<string, unknown> }   (CodegenOptions overrides)
 *   SCRIPTED_AI_RECORD  JSON-lines record of every model call (written by scripted-ai.mjs)
 *   HARNESS_REPORT      where to write the JSON report (default: no report file)
 *
 * Exit codes: 0 the iteration ended; 1 genaicode threw (e.g. a plugin failed to load; the
 * error is on stderr); 2 bad usage; 3 the iteration ended but the scripted model or the
 * harness recorded a failure (script exhausted, matcher mismatch, unscripted user input);
 * 128+n when a SIGINT/SIGTERM aborted the iteration (see below).
 *
 * Signals: like genaicode's own interactive worker (dist/main/interactive/codegen-worker.js)
 * the first SIGINT/SIGTERM aborts the iteration's AbortController (plugins see
 * `abortController.signal.aborted`); a second one exits at once.
 *
 * Nothing here reads stdin: the confirm/input handlers answer from the script.
 */
import fs from 'node:fs';
import path from 'node:path';

const startedAt = Date.now();
const projectDirArg = process.argv[2];
if (!projectDirArg) {
  process.stderr.write('usage: node run-genaicode.mjs <projectDir>\n');
  process.exit(2);
}
const projectDir = path.resolve(projectDirArg);
const scriptPath = process.env.SCRIPTED_AI_SCRIPT;
const recordPath = process.env.SCRIPTED_AI_RECORD;
const reportPath = process.env.HARNESS_REPORT;
if (!scriptPath) {
  process.stderr.write('run-genaicode: SCRIPTED_AI_SCRIPT is not set\n');
  process.exit(2);
}

/** Like JSON.stringify, but never throws (cycles, Errors, bigints). */
function safeJson(value) {
  const seen = new WeakSet();
  return JSON.stringify(value, (_key, v) => {
    if (v instanceof Error) return { name: v.name, message: v.message };
    if (typeof v === 'bigint') return v.toString();
    if (typeof v === 'function') return undefined;
    if (typeof v === 'object' && v !== null) {
      if (seen.has(v)) return '[Circular]';
      seen.add(v);
    }
    return v;
  });
}
function plain(value) {
  const text = safeJson(value);
  return text === undefined ? null : JSON.parse(text);
}

const report = {
  projectDir,
  exitCode: 0,
  durationMs: 0,
  signal: null,
  thrown: null,
  result: null,
  harnessErrors: [],
  scriptErrors: [],
  messages: [],
  confirmations: [],
  inputs: [],
  options: null,
  genaicode: null,
};

let finished = false;
function finish(exitCode) {
  if (finished) return;
  finished = true;
  report.durationMs = Date.now() - startedAt;
  if (recordPath && fs.existsSync(recordPath)) {
    for (const line of fs.readFileSync(recordPath, 'utf-8').split('\n')) {
      if (!line.trim()) continue;
      try {
        const call = JSON.parse(line);
        if (call.error && !call.simulated) report.scriptErrors.push(call.error);
      } catch {
        report.harnessErrors.push(`unreadable record line: ${line.slice(0, 200)}`);
      }
    }
  }
  if (exitCode === 0 && (report.scriptErrors.length > 0 || report.harnessErrors.length > 0)) {
    exitCode = 3;
    process.stderr.write(
      `run-genaicode: the iteration ended, but with failures:\n` +
        [...report.scriptErrors, ...report.harnessErrors].map((e) => `  - ${e}\n`).join(''),
    );
  }
  report.exitCode = exitCode;
  if (reportPath) {
    try {
      fs.writeFileSync(reportPath, safeJson(report) ?? 'null', 'utf-8');
    } catch (error) {
      process.stderr.write(`run-genaicode: cannot write report ${reportPath}: ${error}\n`);
    }
  }
  // Exit explicitly: plugins may leave handles (timers, sockets) open; 'exit' hooks still run.
  process.exit(exitCode);
}

let run;
try {
  run = JSON.parse(fs.readFileSync(scriptPath, 'utf-8'));
} catch (error) {
  process.stderr.write(`run-genaicode: cannot read ${scriptPath}: ${error}\n`);
  process.exit(2);
}
if (typeof run !== 'object' || run === null || Array.isArray(run) || typeof run.explicitPrompt !== 'string') {
  process.stderr.write(`run-genaicode: ${scriptPath} must be an object with a string "explicitPrompt"\n`);
  process.exit(2);
}

// genaicode 0.9.5 finds .genaicoderc by walking up from process.cwd() when config.js is
// first evaluated (dist/main/config-lib.js findRcFile), so chdir before importing it.
process.chdir(projectDir);

// The host: a genaicode package folder. Its modules are imported by file URL under dist/,
// the way its own `genaicode` command loads them.
const hostRoot = fs.realpathSync(
  process.env.GENAICODE_HOST_ROOT ||
    path.join(path.dirname(new URL(import.meta.url).pathname), '..', '..', '..', 'node_modules', 'genaicode'),
);
const hostPackage = JSON.parse(fs.readFileSync(path.join(hostRoot, 'package.json'), 'utf-8'));
const resolveGenaicode = (specifier) => {
  const sub = specifier === 'genaicode' ? 'index.js' : specifier.slice('genaicode/'.length);
  return new URL(`file://${path.join(hostRoot, 'dist', sub)}`).href;
};

// dist/cli/cli-params.js parses process.argv at import time (codegen.js imports it): our
// <projectDir> positional would turn into `--task-file=<projectDir>`. Leave it only an
// explicit --ai-service (else it auto-detects from API-key env vars and warns). Without
// --interactive in argv, a missing .genaicoderc throws instead of prompting on stdin.
// argv[1] is the host's own command, as when a user starts `genaicode`: a plugin finds its
// host from it.
const hostBin = typeof hostPackage.bin === 'string' ? hostPackage.bin : Object.values(hostPackage.bin ?? {})[0];
process.argv = [process.argv[0], path.join(hostRoot, hostBin ?? 'bin/genaicode.cjs'), '--ai-service=plugin:scripted'];

const confirmDefault = run.confirm === undefined || run.confirm === true || run.confirm === 'yes';
const confirmQueue = Array.isArray(run.confirmations) ? [...run.confirmations] : [];
const inputQueue = Array.isArray(run.inputs) ? [...run.inputs] : [];

const RETRY_PROMPT = 'Content generation failed';

async function confirmHandler(props) {
  const { prompt, includeAnswer, defaultValue, confirmLabel, declineLabel } = props;
  let response;
  const queued = confirmQueue[0];
  if (queued && (!queued.promptIncludes || prompt.includes(queued.promptIncludes))) {
    confirmQueue.shift();
    response = { confirmed: queued.confirmed, ...(queued.answer !== undefined ? { answer: queued.answer } : {}) };
  } else if (queued && queued.promptIncludes && !prompt.startsWith(RETRY_PROMPT)) {
    report.harnessErrors.push(
      `confirmation "${prompt}" did not match the next scripted confirmation (promptIncludes ${JSON.stringify(queued.promptIncludes)})`,
    );
    response = { confirmed: false };
  } else if (prompt.startsWith(RETRY_PROMPT)) {
    // genaicode's AI-service fallback asks whether to retry a failed model call
    // (dist/prompt/ai-service-fallback.js); a "yes" would retry an exhausted script forever.
    response = { confirmed: false };
  } else {
    response = { confirmed: confirmDefault };
  }
  report.confirmations.push({ prompt, confirmLabel, declineLabel, includeAnswer, defaultValue, response });
  return response;
}

async function inputHandler(prompt, message) {
  let answer;
  if (inputQueue.length > 0) {
    answer = inputQueue.shift();
  } else if (typeof run.defaultInput === 'string') {
    answer = run.defaultInput;
  } else {
    const error = `genaicode asked for user input ("${prompt}": ${JSON.stringify(message)}) but the script has no input left`;
    report.harnessErrors.push(error);
    report.inputs.push({ prompt, message, answer: null });
    throw new Error(`harness: ${error}`);
  }
  report.inputs.push({ prompt, message, answer });
  return { answer };
}

let abortController = null;
let signalCount = 0;
function onSignal(signal) {
  signalCount++;
  const code = 128 + (signal === 'SIGINT' ? 2 : 15);
  report.signal = signal;
  if (signalCount > 1 || !abortController) {
    finish(code);
    return;
  }
  process.stderr.write(`run-genaicode: ${signal}: aborting the iteration\n`);
  abortController.abort();
}
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);

try {
  const rootUrl = resolveGenaicode('genaicode');
  // The root entry does not import config.js, so registering handlers first is safe.
  const genaicode = await import(rootUrl);
  genaicode.registerConfirmHandler(confirmHandler);
  genaicode.registerInputHandler(inputHandler);
  genaicode.registerContentHandler(({ message }) => {
    report.messages.push(plain({ type: message.type, content: message.content, data: message.data }));
  });

  const abortModule = await import(resolveGenaicode('genaicode/main/common/abort-controller.js'));
  // Importing codegen.js evaluates config.js: reads .genaicoderc and loads the plugins.
  const codegen = await import(resolveGenaicode('genaicode/main/codegen.js'));
  report.genaicode = { root: rootUrl, version: hostPackage.version };

  // The option names are CodegenOptions in dist/main/codegen-types.d.ts; the defaults mirror
  // what `genaicode --interactive` passes (dist/main/codegen.js runCodegen), minus the
  // model-calling extras (context optimization, history, conversation summaries).
  const options = {
    aiService: 'plugin:scripted',
    askQuestion: true,
    interactive: true,
    ui: false,
    explicitPrompt: run.explicitPrompt,
    allowFileCreate: true,
    allowFileDelete: true,
    allowDirectoryCreate: true,
    allowFileMove: true,
    vision: false,
    temperature: 0.7,
    cheap: false,
    dryRun: false,
    verbose: false,
    requireExplanations: true,
    disableCache: true,
    disableContextOptimization: true,
    historyEnabled: false,
    conversationSummaryEnabled: false,
    // Without this a failing model call makes genaicode ask "retry?" in interactive mode.
    disableAiServiceFallback: true,
    isDev: false,
    ...(run.options ?? {}),
  };
  report.options = plain(options);

  // Like dist/main/interactive/codegen-worker.js: one AbortController per iteration,
  // published through setAbortController for handlers that read it.
  abortController = new AbortController();
  abortModule.setAbortController(abortController);
  const result = await codegen.runCodegenIteration(options, abortController.signal);
  report.result = plain(result ?? null);
  if (report.signal) {
    finish(128 + (report.signal === 'SIGINT' ? 2 : 15));
  } else {
    finish(0);
  }
} catch (error) {
  report.thrown = error instanceof Error ? { name: error.name, message: error.message, stack: error.stack } : String(error);
  process.stderr.write(`run-genaicode: genaicode threw: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  finish(report.signal ? 128 + (report.signal === 'SIGINT' ? 2 : 15) : 1);
}
