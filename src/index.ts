/**
 * genaicode-docker: run a coding model's commands and tasks in hardened Docker containers.
 * Named exports only; test/unit/exports.test.ts pins this list.
 */
export {
  SandboxError,
  SANDBOX_ERROR_CODES,
  ERROR_CODES,
  FILE_OPERATION_REASONS,
  isSandboxError,
  type ErrorData,
  type FileOperationReason,
  type SandboxErrorCode,
} from './errors.js';
export { loadConfig, type LoadConfigOptions } from './config/load-config.js';
export {
  ConfigSchema,
  DEFAULT_ALLOWED_IMAGES,
  DEFAULT_IMAGE,
  CONFIG_FILE_NAME,
  parseByteSize,
  type Config,
  type ConfigInput,
} from './config/config-schema.js';
export type {
  ContainerEngine,
  ContainerSpec,
  ContainerState,
  ContainerSummary,
  EngineInfo,
  ExecSession,
  ExecSpec,
  ImageInfo,
  PathStat,
  PullOptions,
  PullProgress,
  StreamId,
} from './engine/container-engine.js';
export { LANGUAGES, type Language } from './config/languages.js';
export { imageForLanguage } from './images/language-images.js';
export { detectProjectLanguage } from './project/project-language.js';
export { DockerEngine } from './engine/docker-engine.js';
export { KubernetesEngine, type KubernetesSettings } from './engine/kubernetes/kubernetes-engine.js';
export { createEngine, type EngineSettings } from './engine/create-engine.js';
export { resolveConnection, type EngineConnection } from './engine/connection.js';
export { SandboxManager, newSessionId, type StartOptions, type SandboxManagerOptions } from './sandbox/sandbox-manager.js';
export { Sandbox, TIMEOUT_EXIT_CODE, CANCELED_EXIT_CODE, type SandboxInfo } from './sandbox/sandbox.js';
export type { ExecOptions, ExecResult } from './commands/exec-types.js';
export { sweepContainers, type SweepReport, type SweepOptions } from './sandbox/sweep.js';
export { LABEL } from './sandbox/labels.js';
export { INVARIANTS, checkImageAllowed, type MountRequest } from './policy/policy.js';
export { PACKAGE_VERSION } from './version.js';
export { createDockerPlugin, type DockerPluginOptions } from './prompt/create-plugin.js';
export { buildCommandAnswer, extractiveSummary, keyLines, type CommandAnswer, type OutputSummarizer } from './answer/command-answer.js';
export type { HostServices } from './prompt/host/host-services.js';
export {
  CodeExecutor,
  CODE_LANGUAGES,
  type CodeExecutorOptions,
  type CodeLanguage,
  type CodeRequest,
  type CodeRun,
} from './code/code-executor.js';
export { buildCodeAnswer, type CodeAnswer } from './code/code-answer.js';
