import { displayText } from '../display-text.js';
import { loadConfig } from '../config/load-config.js';
import { type Config, type ConfigInput } from '../config/config-schema.js';
import type { ContainerEngine } from '../engine/container-engine.js';
import { genaicodeHost, type HostServices } from './host/host-services.js';
import { checkImageAllowed } from '../policy/policy.js';
import { SandboxManager } from '../sandbox/sandbox-manager.js';
import { CodeExecutor } from '../code/code-executor.js';
import { CodeExecutors } from '../code/code-executors.js';
import { ConversationContainers } from './conversation-containers.js';
import { swallowed } from '../debug.js';
import { detectProjectLanguage } from '../project/project-language.js';
import { type Language } from '../config/languages.js';

export interface DockerPluginOptions {
  /** Configuration passed in code; wins over .genaicode-docker.json and GENAICODE_DOCKER_*. */
  config?: ConfigInput;
  /** @default a DockerEngine from the configuration */
  engine?: ContainerEngine;
  /** @default the running GenAIcode */
  host?: HostServices;
  /** Where the project (and .genaicode-docker.json) is searched from. @default process.cwd() at first use */
  cwd?: string;
}

/**
 * What every action handler shares: the configuration and the sandbox manager, created
 * lazily at the first action (loading the plugin touches neither the engine nor the disk
 * beyond reading config), and the host services.
 */
export interface PluginRuntime {
  config(): Config;
  manager(): SandboxManager;
  /** codeExecute's executor of one conversation (its kept-alive container is removed when that conversation ends). */
  codeExecutor(conversation: object): CodeExecutor;
  host(): Promise<HostServices>;
  /** The image allowlist, checked before the user is asked to confirm anything. */
  checkImage(image: string): void;
  /** The containers of each conversation, removed when it ends unless kept. */
  conversations(): ConversationContainers;
  /** The project's language (its marker files), which picks the image when a start names none. */
  projectLanguage(): Language | undefined;
}

/**
 * The host as the handlers see it: every text put before the user (a confirmation
 * question, a system message) is shown with its control and invisible characters named
 * (displayText), whoever chose the text: the model, a container or the engine.
 */
function displaySafeHost(host: HostServices): HostServices {
  return {
    confirm: (prompt, options) => host.confirm(displayText(prompt, 2000), options),
    systemMessage: (text, data) => host.systemMessage(displayText(text, 2000), data),
    abortSignal: () => host.abortSignal(),
    onConversationEnd: (listener) => host.onConversationEnd(listener),
    profile: host.profile,
  };
}

export function createPluginRuntime(options: DockerPluginOptions = {}): PluginRuntime {
  let config: Config | undefined;
  let manager: SandboxManager | undefined;
  let codeExecutors: CodeExecutors | undefined;
  let host: HostServices | undefined;
  let conversations: ConversationContainers | undefined;
  const runtime: PluginRuntime = {
    config() {
      config ??= loadConfig({ ...(options.cwd ? { cwd: options.cwd } : {}), ...(options.config ? { overrides: options.config } : {}) });
      return config;
    },
    manager() {
      if (!manager) {
        manager = new SandboxManager({ config: runtime.config(), ...(options.engine ? { engine: options.engine } : {}) });
        // Orphans of crashed sessions are removed while genaicode runs, not only at the first start.
        const minutes = runtime.config().sweepIntervalMinutes;
        if (minutes > 0) manager.sweepEvery(minutes * 60_000);
      }
      return manager;
    },
    codeExecutor(conversation) {
      codeExecutors ??= new CodeExecutors(() => new CodeExecutor({ manager: runtime.manager() }));
      return codeExecutors.for(conversation);
    },
    host: async () => {
      if (!host) {
        const h = displaySafeHost(options.host ?? (await genaicodeHost()));
        host ??= h;
        if (host === h)
          h.onConversationEnd((conversation) =>
            runtime
              .conversations()
              .end(conversation)
              .then(() => undefined),
          );
      }
      return host;
    },
    conversations() {
      conversations ??= new ConversationContainers(
        (text) => {
          void runtime.host().then(
            (h) => h.systemMessage(text),
            (e: unknown) => swallowed('host services for a report', e),
          );
        },
        // codeExecute's sandbox of the conversation ends with it too.
        (conversation) => codeExecutors?.end(conversation) ?? Promise.resolve(),
      );
      return conversations;
    },
    checkImage(image) {
      const { images } = runtime.config();
      checkImageAllowed(image, images.allow, images.projectAllow);
    },
    // GenAIcode 0.9.5 keeps no detected profile: it detects one (project-profiles/, five
    // profiles, searching sub-folders and logging to the console) only to write a new
    // .genaicoderc, and rcConfig has no trace of it. So the project's own files decide.
    projectLanguage: () => detectProjectLanguage(runtime.config().projectRoot),
  };
  return runtime;
}
