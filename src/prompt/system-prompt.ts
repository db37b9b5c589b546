import type { Config } from '../config/config-schema.js';
import { NO_HOST, type HostProfile } from './host/host-profile.js';
import { swallowed } from '../debug.js';

/**
 * Our section of GenAIcode's system prompt: what the Docker actions are and how to use them,
 * in the words of the host that loaded us (its dispatcher is askQuestion in 0.9.5, iterate
 * in 1.x). GenAIcode caps its system prompt and its own part uses most of it: keep this short.
 */
export function dockerSystemPrompt(config: Config | undefined, actions: { task: boolean }, host: HostProfile = NO_HOST): string {
  const lines = [
    '## Docker sandbox (genaicode-docker)',
    `Docker actions now available (the actionType of ${host.dispatcher}; always with the plugin: prefix):`,
    '• plugin:startContainer({ image, name? })',
    '• plugin:runCommand({ containerId, cmd, timeoutMs?, background?, yieldMs? }): with background, or past yieldMs, answers { processId }; then plugin:readProcessOutput/writeProcessInput/waitForOutput/stopProcess (containerId, processId), waitForPort (containerId, port), listProcesses',
    '• plugin:stopContainer({ containerId })',
    '• plugin:readContainerFile({ containerId, path, startLine?, endLine? }), plugin:writeContainerFile({ containerId, path, content }), plugin:listContainerDirectory({ containerId, path?, depth? }), plugin:editContainerFile({ containerId, path, oldText, newText })',
    'Files: paths are relative to the container working folder (/workspace) or absolute inside it; prefer these actions to cat/echo in runCommand (no quoting, exact content).',
    'runCommand keeps one shell per container: cd and export carry over, as at a terminal.',
    'Note: short command output comes back whole (output); long output as a short summary with the lines needed to fix a failure verbatim (keyLines); the full log is on disk.',
    'Always stop containers when done; every container is also removed when genaicode ends.',
  ];
  if (actions.task) {
    lines.push(
      'For complex tasks in an isolated environment:',
      '• plugin:runContainerTask({ image, taskDescription })',
      'Use it to execute multi-step command-line tasks; give a clear, step-by-step description. It starts the container, runs commands until the task is done, cleans up, and returns { success, summary, logPath }.',
      "Example: plugin:runContainerTask({ image: 'genaicode-docker/sandbox-python:latest', taskDescription: 'Write fib.py printing the first 10 Fibonacci numbers, run it, and check the output.' })",
    );
    if (host.builtinContainerTask)
      lines.push(
        "GenAIcode's own runContainerTask (no plugin: prefix) is a different action without these limits and logs: use plugin:runContainerTask.",
      );
  }
  if (config?.codeExecute.enabled ?? true) {
    const c = config?.codeExecute;
    lines.push(
      'To run a snippet of code without managing a container:',
      '• plugin:codeExecute({ language: "python" | "bash", code, timeoutSeconds? })',
      `It has python3, bash and curl; ${c ? `${Math.round(c.memory / 1024 ** 2)} MiB, ${c.cpus} CPU, network ${c.network}, ${c.timeoutSeconds} s limit by default` : 'tight limits'}; the root is read-only, /tmp is writable. ` +
        'Calls reuse one container: keep state in files under /tmp, and expect it gone when the answer says stateLost. ' +
        'Prefer several small calls to one long one; print only what you need (long output is cut).',
    );
  }
  if (config) {
    lines.push(
      `Sandbox: default image ${config.images.default}; allowed images ${(config.images.projectAllow ?? config.images.allow).join(', ')}; ` +
        `network ${config.network}; memory ${Math.round(config.limits.memory / 1024 ** 2)} MiB; commands time out after ${Math.round(config.exec.timeoutMs / 1000)} s (exit 124).`,
    );
  }
  return lines.join('\n');
}

interface GenaicodeConfigModule {
  rcConfig: { importantContext?: { systemPrompt?: string[] } };
}

/**
 * Appends our section to genaicode's system prompt. Deliberately NOT awaited: genaicode's
 * config module is itself suspended while it loads plugins, so awaiting it here would
 * deadlock; the promise settles before the first model call.
 */
export function installSystemPrompt(section: () => string, host: HostProfile): void {
  const url = host.moduleUrl('main/config.js');
  if (!url) return; // not inside genaicode (library use, unit tests): nothing to extend
  void import(url).then(
    (mod) => {
      const rc = (mod as unknown as GenaicodeConfigModule).rcConfig;
      rc.importantContext ??= {};
      const list = (rc.importantContext.systemPrompt ??= []);
      const text = section();
      if (!list.some((s) => s.startsWith('## Docker sandbox (genaicode-docker)'))) list.push(text);
    },
    (e: unknown) => swallowed("genaicode's config module, for the system prompt", e),
  );
}
