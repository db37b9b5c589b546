import type { NetworkMode, ProjectMount } from '../policy/policy.js';
import { mountDescription } from '../actions/answers.js';
import type { Config } from '../config/config-schema.js';
import { cancelOnSigint } from './cancel-on-sigint.js';
import { reportFailure } from './format.js';
import { SandboxManager } from '../sandbox/sandbox-manager.js';
import { GeminiTaskModel } from '../task/gemini-model.js';
import { runTask } from '../task/task-loop.js';
import type { TaskModel } from '../task/task-model.js';
import { displayText } from '../display-text.js';
import { detectProjectLanguage } from '../project/project-language.js';
import { type Language } from '../config/languages.js';
import { chooseImage } from '../images/golden-images.js';
import { changesLine } from '../project/project-changes.js';

export interface TaskCliOptions {
  image?: string;
  language?: Language;
  maxCommands?: number;
  network?: NetworkMode;
  /** The project at the working folder, as the plugin mounts it (at most project.mount). @default none */
  project?: ProjectMount;
  stepModel?: string;
  summaryModel?: string;
  json: boolean;
}

const MISSING_KEY_MESSAGE =
  'genaicode-docker task needs a Gemini API key: set GEMINI_API_KEY (from Google AI Studio). ' +
  'Models: --step-model (default gemini-2.5-flash) and --summary-model (default gemini-2.5-pro). ' +
  "Inside GenAIcode, runContainerTask uses GenAIcode's own model instead.";

/** `task`: the runContainerTask loop from a shell, on Gemini. Returns the exit code (0 = task succeeded). */
export async function task(
  config: Config,
  description: string,
  options: TaskCliOptions,
  env: NodeJS.ProcessEnv,
  out: (line: string) => void,
  err: (line: string) => void,
  model?: TaskModel,
): Promise<number> {
  const apiKey = env.GEMINI_API_KEY ?? env.GOOGLE_API_KEY;
  if (!model && !apiKey) {
    err(MISSING_KEY_MESSAGE);
    return 2;
  }
  const taskModel =
    model ??
    new GeminiTaskModel({
      apiKey: apiKey!,
      ...(options.stepModel ? { stepModel: options.stepModel } : {}),
      ...(options.summaryModel ? { summaryModel: options.summaryModel } : {}),
      ...(env.GEMINI_BASE_URL ? { baseUrl: env.GEMINI_BASE_URL } : {}),
    });
  const manager = new SandboxManager({ config });
  const sigint = cancelOnSigint(err, 'aborting the task (Ctrl-C again to force)');
  try {
    const choice = await chooseImage(
      config,
      manager.engine,
      { image: options.image, language: options.language },
      options.image === undefined && options.language === undefined ? detectProjectLanguage(config.projectRoot) : undefined,
    );
    if (choice.note) err(`note: ${choice.note}`);
    const image = choice.image;
    const network = options.network ?? config.task.network;
    const sandbox = await manager.start({
      image,
      network,
      signal: sigint.signal,
      ...(options.project ? { project: options.project } : {}),
    });
    try {
      const mounted = sandbox.info.project ? `, project ${sandbox.info.project.mount} at ${sandbox.info.project.containerRoot}` : '';
      err(`task in ${sandbox.name} (${image}, network ${network}${mounted})`);
      const result = await runTask({
        sandbox,
        taskDescription: description,
        model: taskModel,
        limits: {
          maxCommands: options.maxCommands ?? config.task.maxCommands,
          budgetMs: config.task.budgetMs,
          commandTimeoutMs: config.exec.timeoutMs,
        },
        log: manager.logs.create('task'),
        environment: `image ${image}; working directory ${sandbox.info.workdir}; ${sandbox.info.project ? `the project ${mountDescription(sandbox.info.project.mount).toLowerCase()} at ${sandbox.info.project.containerRoot}` : 'no project mounted'}; network ${network}; /bin/sh`,
        signal: sigint.signal,
        onProgress: (p) => {
          // A quoted command stays on its one line (line feeds shown as \n); main.ts escapes the rest.
          if (p.result)
            err(
              `[${p.step}] $ ${displayText(p.command ?? '')} -> exit ${p.result.exitCode}${p.result.timedOut ? ' (timed out)' : ''} in ${p.result.durationMs} ms`,
            );
          else if (p.command && p.reasoning) err(`[${p.step}] ${displayText(p.reasoning)}`);
        },
      });
      const answer = { success: result.success, summary: result.summary, logPath: result.logPath, commandsRun: result.commandsRun };
      out(
        options.json
          ? JSON.stringify(answer)
          : `${result.success ? 'SUCCESS' : 'NOT DONE'} after ${result.commandsRun} commands\n${result.summary}\nfull log: ${result.logPath}`,
      );
      return result.success ? 0 : 1;
    } finally {
      await sandbox.stop();
      const changes = await sandbox.projectChanges();
      if (changes && !options.json) err(displayText(changesLine(changes)));
      for (const w of changes?.warnings ?? []) if (!options.json) err(`warning: ${displayText(w)}`);
    }
  } catch (e) {
    return reportFailure(e, options.json, out, err);
  } finally {
    sigint.dispose();
    await manager.stopAll();
  }
}
