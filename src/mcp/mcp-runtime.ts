import { loadConfig } from '../config/load-config.js';
import type { Config } from '../config/config-schema.js';
import { detectProjectLanguage } from '../project/project-language.js';
import { type Language } from '../config/languages.js';
import { CodeExecutor } from '../code/code-executor.js';
import type { ContainerEngine } from '../engine/container-engine.js';
import { SandboxManager } from '../sandbox/sandbox-manager.js';

export interface McpRuntimeOptions {
  /** The project (and where .genaicode-docker.json is searched from). @default process.cwd() */
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  engine?: ContainerEngine;
}

/**
 * What the MCP tools share: the configuration (loaded once, at the server's start, so a
 * wrong setting stops the server with its sentence instead of failing every call), the one
 * sandbox manager of this server and codeExecute's executor. The engine is touched at the
 * first tool that needs it.
 */
export interface McpRuntime {
  readonly config: Config;
  manager(): SandboxManager;
  codeExecutor(): CodeExecutor;
  /** The project's language (its marker files), which picks the image when a start names none. */
  projectLanguage(): Language | undefined;
  /** Whether any container of this server was started (nothing to remove otherwise). */
  started(): boolean;
}

export function createMcpRuntime(options: McpRuntimeOptions = {}): McpRuntime {
  const config = loadConfig({ ...(options.cwd ? { cwd: options.cwd } : {}), ...(options.env ? { env: options.env } : {}) });
  let manager: SandboxManager | undefined;
  let codeExecutor: CodeExecutor | undefined;
  const runtime: McpRuntime = {
    config,
    manager() {
      if (!manager) {
        manager = new SandboxManager({ config, ...(options.engine ? { engine: options.engine } : {}) });
        if (config.sweepIntervalMinutes > 0) manager.sweepEvery(config.sweepIntervalMinutes * 60_000);
      }
      return manager;
    },
    codeExecutor() {
      codeExecutor ??= new CodeExecutor({ manager: runtime.manager() });
      return codeExecutor;
    },
    projectLanguage: () => detectProjectLanguage(config.projectRoot),
    started: () => manager !== undefined,
  };
  return runtime;
}
