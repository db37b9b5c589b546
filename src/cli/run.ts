import type { NetworkMode, ProjectMount } from '../policy/policy.js';
import type { Config } from '../config/config-schema.js';
import type { ExecResult } from '../commands/exec-types.js';
import { cancelOnSigint } from './cancel-on-sigint.js';
import { SandboxManager, type StartOptions } from '../sandbox/sandbox-manager.js';
import { formatExecResult, reportFailure } from './format.js';
import { detectProjectLanguage } from '../project/project-language.js';
import { type Language } from '../config/languages.js';
import { chooseImage } from '../images/golden-images.js';
import { changesLine } from '../project/project-changes.js';
import { displayText } from '../display-text.js';
import { buildCommandAnswer } from '../answer/command-answer.js';

export interface RunOptions {
  image?: string;
  /** A language's image instead of `image`; with neither, the project's language when its image is available. */
  language?: Language;
  timeoutMs?: number;
  network?: NetworkMode;
  memoryBytes?: number;
  /** The project at the working folder, as the plugin mounts it (at most project.mount). @default none */
  project?: ProjectMount;
  json: boolean;
  /** Print the answer the model gets for the command (its extractive summary: no model here) instead of the result. */
  answer?: boolean;
}

/**
 * Starts a sandbox, runs one command through the same exec pipeline the model gets,
 * stops the sandbox, and prints the result. Ctrl-C cancels the command (its process tree
 * is killed) and still removes the container. Returns the command's exit code.
 */
export async function run(
  config: Config,
  argv: string[],
  options: RunOptions,
  out: (line: string) => void,
  err: (line: string) => void,
): Promise<number> {
  // One line of JSON on stdout and nothing else: the result, or the model's answer.
  const machine = options.json || options.answer === true;
  const manager = new SandboxManager({ config });
  const sigint = cancelOnSigint(err, 'canceling: killing the command in the container (Ctrl-C again to force)');
  try {
    const choice = await chooseImage(
      config,
      manager.engine,
      { image: options.image, language: options.language },
      options.image === undefined && options.language === undefined ? detectProjectLanguage(config.projectRoot) : undefined,
    );
    if (choice.note && !machine) err(`note: ${choice.note}`);
    const start: StartOptions = {
      image: choice.image,
      ...(options.network ? { network: options.network } : {}),
      ...(options.memoryBytes !== undefined ? { memoryBytes: options.memoryBytes } : {}),
      ...(options.project ? { project: options.project } : {}),
      signal: sigint.signal,
      onPullProgress: (p) => {
        if (!machine && p.status) err(`pull ${p.id}: ${p.status}${p.total ? ` ${p.current ?? 0}/${p.total}` : ''}`);
      },
    };
    const sandbox = await manager.start(start);
    let result: ExecResult | undefined;
    try {
      // A single argument is a shell command line; several are an argument vector.
      const command = argv.length === 1 ? argv[0]! : argv;
      result = await sandbox.exec(command, {
        ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
        signal: sigint.signal,
      });
      if (!machine) out(formatExecResult(result));
      return result.exitCode;
    } finally {
      // The change list is known once the container is gone (its stop applies the rest):
      // with --json it goes into the one JSON line, so a script sees what reached its files.
      try {
        await sandbox.stop();
      } finally {
        const changes = await sandbox.projectChanges();
        if (machine) {
          const shown =
            result && options.answer ? await buildCommandAnswer(result, { thresholdBytes: config.plugin.summaryThresholdBytes }) : result;
          if (shown) out(JSON.stringify(changes ? { ...shown, projectChanges: changes } : shown));
        } else {
          if (changes) err(displayText(changesLine(changes)));
          for (const w of changes?.warnings ?? []) err(`warning: ${displayText(w)}`);
        }
      }
    }
  } catch (e) {
    return reportFailure(e, machine, out, err);
  } finally {
    sigint.dispose();
    await manager.stopAll();
  }
}
