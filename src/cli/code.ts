import type { Config } from '../config/config-schema.js';
import { buildCodeAnswer } from '../code/code-answer.js';
import { CodeExecutor, type CodeLanguage } from '../code/code-executor.js';
import { SandboxManager } from '../sandbox/sandbox-manager.js';
import { cancelOnSigint } from './cancel-on-sigint.js';
import { formatExecResult, reportFailure } from './format.js';

export interface CodeOptions {
  language: CodeLanguage;
  oneShot: boolean;
  timeoutSeconds?: number;
  json: boolean;
}

/**
 * Runs one snippet through codeExecute's executor (the sandbox profile and delivery the
 * model gets), prints the result, and removes the container. `--json` prints the answer
 * the model would receive. Returns the snippet's exit code.
 */
export async function code(
  config: Config,
  source: string,
  options: CodeOptions,
  out: (line: string) => void,
  err: (line: string) => void,
): Promise<number> {
  const effective: Config = { ...config, codeExecute: { ...config.codeExecute, keepAlive: !options.oneShot } };
  const manager = new SandboxManager({ config: effective });
  const executor = new CodeExecutor({ manager });
  const sigint = cancelOnSigint(err, 'canceling: killing the snippet in the container (Ctrl-C again to force)');
  try {
    const run = await executor.execute({
      language: options.language,
      code: source,
      ...(options.timeoutSeconds !== undefined ? { timeoutSeconds: options.timeoutSeconds } : {}),
      signal: sigint.signal,
    });
    if (options.json) out(JSON.stringify(await buildCodeAnswer(run, { maxOutputChars: effective.codeExecute.maxOutputChars })));
    else out(formatExecResult({ ...run.result, command: `${options.language} snippet (${Buffer.byteLength(source)} bytes)` }));
    return run.result.exitCode;
  } catch (e) {
    return reportFailure(e, options.json, out, err);
  } finally {
    sigint.dispose();
    await executor.shutdown();
    await manager.stopAll();
  }
}
