import type { Plugin } from './host/genaicode-types.js';
import { createPluginRuntime, type DockerPluginOptions } from './plugin-runtime.js';
import { createDockerActionHandlers } from './steps/step-ask-question/handlers/docker.js';
import { createRunContainerTaskHandler } from './steps/step-ask-question/handlers/run-container-task.js';
import { createCodeExecuteHandler } from './steps/step-ask-question/handlers/code-execute.js';
import { createContainerFileHandlers } from './steps/step-ask-question/handlers/container-files.js';
import { createProcessHandlers } from './steps/step-ask-question/handlers/processes.js';
import { dockerSystemPrompt, installSystemPrompt } from './system-prompt.js';
import { swallowed } from '../debug.js';
import { prePullAtLoad } from './pre-pull-at-load.js';
import { runningHost } from './host/host-profile.js';

export type { DockerPluginOptions } from './plugin-runtime.js';

/**
 * The GenAIcode plugin. Loading it touches no engine and never blocks genaicode's start:
 * the configuration and the engine connection are made at the first action. One
 * background check reports an unreachable engine as a system message, then pre-pulls the
 * language images of `images.prePull` (pre-pull-at-load.ts).
 *
 * In `.genaicoderc`: `"plugins": ["./node_modules/genaicode-docker/dist/plugin.js"]`, or a
 * local file `export default createDockerPlugin({ config: { ... } })`.
 */
export function createDockerPlugin(options: DockerPluginOptions = {}): Plugin {
  const runtime = createPluginRuntime(options);
  const host = options.host?.profile ?? runningHost();
  installSystemPrompt(() => {
    let config;
    try {
      config = runtime.config();
    } catch (e) {
      config = undefined; // the first action will answer with the configuration error
      swallowed('configuration for the system prompt', e);
    }
    return dockerSystemPrompt(config, { task: true }, host);
  }, host);
  setTimeout(() => {
    void (async () => {
      try {
        await runtime.manager().engine.info();
        void prePullAtLoad(runtime);
      } catch (e) {
        swallowed('engine check at load', e);
        const host = await runtime.host().catch((hostError: unknown) => swallowed('host services', hostError));
        host?.systemMessage(`genaicode-docker: ${e instanceof Error ? e.message : String(e)}`);
      }
    })();
  }, 0).unref();
  return {
    name: 'genaicode-docker',
    actionHandlers: {
      ...createDockerActionHandlers(runtime),
      runContainerTask: createRunContainerTaskHandler(runtime),
      codeExecute: createCodeExecuteHandler(runtime),
      ...createContainerFileHandlers(runtime),
      ...createProcessHandlers(runtime),
    },
  };
}
