import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import type { z } from 'zod';
import { SandboxError } from '../errors.js';
import { checkConfigInvariants } from '../policy/policy.js';
import { CONFIG_FILE_NAME, ConfigSchema, ENV_PREFIX, type Config, type ConfigInput } from './config-schema.js';
import { envVarFor, fromEnv } from './environment.js';
import { checkLogsDir, defaultLogsDir } from './logs-dir.js';
import { realPathOf } from '../paths.js';
import { checkProjectFile, splitProjectAllowlist } from './project-trust.js';

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Deep merge where later sources win; arrays are replaced, not concatenated. */
function mergeConfig(...layers: unknown[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const layer of layers) {
    if (!isPlainObject(layer)) continue;
    for (const [k, v] of Object.entries(layer)) {
      if (v === undefined) continue;
      out[k] = isPlainObject(v) && isPlainObject(out[k]) ? mergeConfig(out[k], v) : v;
    }
  }
  return out;
}

/** Walks up from `cwd` to the folder holding `.genaicoderc`; `cwd` itself when there is none. */
function findProjectRoot(cwd: string): string {
  let dir = resolve(cwd);
  for (;;) {
    if (existsSync(join(dir, '.genaicoderc'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) return resolve(cwd);
    dir = parent;
  }
}

function readConfigFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new SandboxError('INVALID_CONFIG', `Cannot read ${path}: ${(e as Error).message}`, { cause: e });
  }
  try {
    const parsed: unknown = JSON.parse(text);
    if (!isPlainObject(parsed)) throw new Error('the top level must be an object');
    return parsed;
  } catch (e) {
    throw new SandboxError('INVALID_CONFIG', `${path} is not valid JSON: ${(e as Error).message}`, { cause: e });
  }
}

function formatIssue(issue: z.ZodIssue, source: string): string {
  const variable = source === 'environment' ? envVarFor(issue.path) : undefined;
  const field = variable ?? (issue.path.join('.') || '(top level)');
  if (issue.code === 'unrecognized_keys') {
    return `${source}: unknown field ${issue.keys.map((k) => [...issue.path, k].join('.')).join(', ')}`;
  }
  if (issue.code === 'invalid_enum_value') {
    return `${source}: ${field} must be one of ${issue.options.map((o) => JSON.stringify(o)).join(', ')}, got ${JSON.stringify(issue.received)}`;
  }
  return `${source}: ${field}: ${issue.message}`;
}

/** The user's own config file: `$XDG_CONFIG_HOME/genaicode-docker/config.json` (~/.config/...). */
function userConfigFile(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME && isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : join(homedir(), '.config');
  return join(base, 'genaicode-docker', 'config.json');
}

export interface LoadConfigOptions {
  /** Working directory the project root and the config file are searched from. @default process.cwd() */
  cwd?: string;
  /** Environment to read GENAICODE_DOCKER_* from. @default process.env */
  env?: NodeJS.ProcessEnv;
  /** Options passed in code; they win over every other source. */
  overrides?: ConfigInput;
}

/**
 * Resolves the configuration once. Sources, later wins: defaults; the user's own file
 * ($GENAICODE_DOCKER_CONFIG, else ~/.config/genaicode-docker/config.json); the project's
 * `.genaicode-docker.json` (next to `.genaicoderc`, else in the working directory), which
 * may tune the sandbox but not widen trust (project-trust.ts); GENAICODE_DOCKER_*
 * variables; then `overrides`.
 * @throws SandboxError INVALID_CONFIG naming the field, the source and the expected value;
 *         POLICY_VIOLATION when a value breaks a security invariant.
 */
export function loadConfig(options: LoadConfigOptions = {}): Config {
  const cwd = resolve(options.cwd ?? process.cwd());
  const env = options.env ?? process.env;
  const projectRoot = findProjectRoot(cwd);
  const sources: string[] = ['defaults'];
  const layers: Array<{ name: string; value: unknown }> = [];

  // The user's own file: trusted with every setting.
  const explicitFile = env[`${ENV_PREFIX}CONFIG`];
  const userFile = explicitFile ? resolve(cwd, explicitFile) : userConfigFile(env);
  if (explicitFile && !existsSync(userFile)) {
    throw new SandboxError('INVALID_CONFIG', `${ENV_PREFIX}CONFIG points to ${userFile}, which does not exist.`);
  }
  if (existsSync(userFile)) layers.push({ name: userFile, value: readConfigFile(userFile) });
  // The project's file: the repository's word, so it may tune the sandbox but not widen trust.
  const projectFile = [join(projectRoot, CONFIG_FILE_NAME), join(cwd, CONFIG_FILE_NAME)].find((p) => existsSync(p) && p !== userFile);
  let projectLayer: { name: string; value: unknown } | undefined;
  let projectAllow: string[] | undefined;
  let projectChanged: string[] = [];
  if (projectFile) layers.push((projectLayer = { name: projectFile, value: readConfigFile(projectFile) }));
  const envLayer = fromEnv(env);
  if (Object.keys(envLayer).length > 0) layers.push({ name: 'environment', value: envLayer });
  if (options.overrides) layers.push({ name: 'options', value: options.overrides });

  // Each layer is checked on its own first, so an error names the source that caused it.
  for (const layer of layers) {
    checkConfigInvariants(layer.value, layer.name, projectRoot);
    const partial = ConfigSchema.safeParse(layer.value);
    if (!partial.success) {
      throw new SandboxError(
        'INVALID_CONFIG',
        `Invalid configuration: ${partial.error.issues.map((i) => formatIssue(i, layer.name)).join('; ')}.`,
      );
    }
    if (layer === projectLayer) {
      const earlier = layers.slice(0, layers.indexOf(layer)).map((l) => l.value);
      const before = ConfigSchema.parse(mergeConfig(...earlier));
      projectChanged = checkProjectFile(layer.name, layer.value, before, ConfigSchema.parse(mergeConfig(...earlier, layer.value)));
      // Its image allowlist narrows the trusted one instead of replacing it.
      const split = splitProjectAllowlist(layer.value);
      layer.value = split.layer;
      projectAllow = split.projectAllow;
    }
    sources.push(layer.name);
  }
  const merged = ConfigSchema.parse(mergeConfig(...layers.map((l) => l.value)));
  const logsSource = [...layers]
    .reverse()
    .find((l) => isPlainObject(l.value) && isPlainObject(l.value.logs) && l.value.logs.dir !== undefined)?.name;
  const logsDir = merged.logs.dir === undefined ? defaultLogsDir(env) : resolve(projectRoot, merged.logs.dir);
  checkLogsDir(
    logsDir,
    projectRoot,
    logsSource ?? 'defaults',
    merged.mountAllow.filter((m) => m.writable).map((m) => resolve(projectRoot, m.hostPath)),
  );
  const mountAllow = merged.mountAllow.map((m) => ({ ...m, hostPath: resolve(projectRoot, m.hostPath) }));
  // Resolved once: the mount checks and the log store see the same real folder.
  return {
    ...merged,
    images: { ...merged.images, ...(projectAllow ? { projectAllow } : {}) },
    projectChanged: projectChanged.length && projectFile ? { file: projectFile, settings: projectChanged } : undefined,
    logs: { ...merged.logs, dir: realPathOf(logsDir) },
    mountAllow,
    projectRoot,
    sources,
  };
}
