import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { z } from 'zod';
import { SandboxError } from './errors.js';
import { ADDABLE_CAPABILITIES, checkConfigInvariants } from './policy/policy.js';

/** Images the model may start when no allowlist is configured (glob patterns). */
export const DEFAULT_ALLOWED_IMAGES = [
  'genaicode-docker/*',
  'busybox:*',
  'alpine:*',
  'debian:*',
  'ubuntu:*',
  'python:*',
  'node:*',
  'golang:*',
  'rust:*',
  'eclipse-temurin:*',
] as const;

/** The golden images: built here (docker/build-offline.sh or their Dockerfiles), never pulled. */
export const LOCAL_ONLY_IMAGES = ['genaicode-docker/*'] as const;

/** Output up to this many bytes (after capping) reaches the model verbatim, with no summary. */
export const DEFAULT_SUMMARY_THRESHOLD_BYTES = 2048;

export const DEFAULT_IMAGE = 'genaicode-docker/sandbox-minimal:latest';

/** Bounds of the limits, shared by the schema and by the checks of start and exec options. */
export const BOUNDS = {
  memoryBytes: { min: 8 * 1024 ** 2, max: 64 * 1024 ** 3 },
  cpus: { min: 0.05, max: 64 },
  pids: { min: 8, max: 65536 },
  ttlSeconds: { min: 10, max: 7 * 24 * 3600 },
  timeoutMs: { min: 100, max: 24 * 3600 * 1000 },
} as const;
export const CONFIG_FILE_NAME = '.genaicode-docker.json';
export const ENV_PREFIX = 'GENAICODE_DOCKER_';

const SIZE_UNITS: Record<string, number> = {
  '': 1, b: 1,
  k: 1024, kb: 1024, kib: 1024,
  m: 1024 ** 2, mb: 1024 ** 2, mib: 1024 ** 2,
  g: 1024 ** 3, gb: 1024 ** 3, gib: 1024 ** 3,
};

/** Parses a byte size: a number of bytes, or Docker's notation ('512m', '1g', '64MiB'). */
export function parseByteSize(value: string | number): number | undefined {
  if (typeof value === 'number') return Number.isInteger(value) && value >= 0 ? value : undefined;
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(value);
  if (!m) return undefined;
  const unit = SIZE_UNITS[(m[2] ?? '').toLowerCase()];
  return unit === undefined ? undefined : Math.floor(Number(m[1]) * unit);
}

function sizeText(n: number): string {
  for (const [unit, size] of [['g', 1024 ** 3], ['m', 1024 ** 2], ['k', 1024]] as const) if (n >= size && n % size === 0) return `${n / size}${unit}`;
  return `${n} bytes`;
}

const byteSize = (min: number, max: number) =>
  z.union([z.number(), z.string()]).transform((v, ctx) => {
    const n = parseByteSize(v);
    if (n === undefined) {
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: `expected a size like 512m, 1g or a number of bytes, got ${JSON.stringify(v)}` });
      return z.NEVER;
    }
    if (n < min || n > max) {
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: `expected between ${sizeText(min)} and ${sizeText(max)}, got ${JSON.stringify(v)}` });
      return z.NEVER;
    }
    return n;
  });


const MountAllow = z.object({
  /** Host path (absolute, or relative to the project root) that may be mounted, with everything under it. */
  hostPath: z.string().min(1),
  /** Whether a mount of it may be writable. @default false */
  writable: z.boolean().default(false),
}).strict();

export const ConfigSchema = z.object({
  engine: z.object({
    /** Engine address in DOCKER_HOST form (unix://, tcp://, npipe://). @default $DOCKER_HOST */
    host: z.string().min(1).optional(),
    /** Unix socket path; used when no host is set. @default /var/run/docker.sock */
    socketPath: z.string().min(1).optional(),
  }).strict().default({}),
  images: z.object({
    /** Glob patterns of images that may be started, checked at run time. */
    allow: z.array(z.string().min(1)).default([...DEFAULT_ALLOWED_IMAGES]),
    /** Image used when none is given. @default genaicode-docker/sandbox-minimal:latest */
    default: z.string().min(1).default(DEFAULT_IMAGE),
    /** Pull images that are missing locally. @default true */
    pull: z.boolean().default(true),
    /**
     * Images that are built on this machine and never pulled, whatever `pull` says: the
     * golden images' names are a Docker Hub namespace this project does not own, so a pull
     * would run whatever its owner published. @default ['genaicode-docker/*']
     */
    localOnly: z.array(z.string().min(1)).default([...LOCAL_ONLY_IMAGES]),
  }).strict().default({}),
  limits: z.object({
    /** Memory limit (swap included). @default 512m */
    memory: byteSize(BOUNDS.memoryBytes.min, BOUNDS.memoryBytes.max).default('512m'),
    /** CPUs. @default 1 */
    cpus: z.number().min(BOUNDS.cpus.min).max(BOUNDS.cpus.max).default(1),
    /** Maximum number of processes. @default 256 */
    pids: z.number().int().min(BOUNDS.pids.min).max(BOUNDS.pids.max).default(256),
  }).strict().default({}),
  /** Network of new containers: 'none' (loopback only) or 'bridge'. @default none */
  network: z.enum(['none', 'bridge']).default('none'),
  /** Read-only root filesystem, with a tmpfs at /tmp and the working directory. @default false */
  readOnlyRoot: z.boolean().default(false),
  /** Size of each tmpfs mount. @default 64m */
  tmpfsSize: byteSize(1024 ** 2, 16 * 1024 ** 3).default('64m'),
  /** Capabilities added back on top of the minimal set. @default [] */
  capAdd: z.array(z.enum(ADDABLE_CAPABILITIES)).default([]),
  /**
   * User to run as (name or uid[:gid]); the image's user when unset. With a writable
   * mount it must be a numeric uid[:gid], and it defaults to the host user's.
   */
  user: z.string().min(1).optional(),
  /**
   * Let a container with a writable mount run as root (uid 0). Off, because a root
   * container can leave root-owned set-uid programs in the mounted folder. @default false
   */
  allowRootWithWritableMounts: z.boolean().default(false),
  /** Working directory inside containers. @default /workspace */
  workdir: z.string().startsWith('/').default('/workspace'),
  /** Host paths that may be mounted into containers (nothing else may be). @default [] */
  mountAllow: z.array(MountAllow).default([]),
  /** Lifetime of a container: its keep-alive process ends by itself after this. @default 7200 */
  ttlSeconds: z.number().int().min(BOUNDS.ttlSeconds.min).max(BOUNDS.ttlSeconds.max).default(7200),
  exec: z.object({
    /** Default per-command timeout. @default 60000 */
    timeoutMs: z.number().int().min(BOUNDS.timeoutMs.min).max(BOUNDS.timeoutMs.max).default(60_000),
    /** Bytes of each stream kept for the answer (head + tail); the log keeps all. @default 16384 */
    maxBytes: z.number().int().min(256).max(16 * 1024 ** 2).default(16 * 1024),
    /** Lines of each stream kept for the answer (head + tail). @default 500 */
    maxLines: z.number().int().min(10).max(1_000_000).default(500),
  }).strict().default({}),
  logs: z.object({
    /**
     * Folder of full command logs (relative paths from the project root). Outside the
     * project by default, so no container with the project mounted can reach it and
     * GenAIcode never sends it to the model as source.
     * @default $XDG_STATE_HOME/genaicode-docker/logs (~/.local/state/genaicode-docker/logs)
     */
    dir: z.string().min(1).optional(),
    /** Older sessions' logs are deleted beyond this total. @default 1g */
    maxTotalBytes: byteSize(1024 ** 2, 1024 ** 4).default('1g'),
    /** Sessions' logs older than this are deleted. @default 14 */
    maxAgeDays: z.number().min(0).max(3650).default(14),
  }).strict().default({}),
  plugin: z.object({
    /** Ask the user before a container starts. @default true */
    confirmStart: z.boolean().default(true),
    /** Output up to this many bytes (after capping) goes to the model verbatim. @default 2048 */
    summaryThresholdBytes: z.number().int().min(0).max(1024 ** 2).default(DEFAULT_SUMMARY_THRESHOLD_BYTES),
  }).strict().default({}),
  task: z.object({
    /** Commands the inner loop may run. @default 25 */
    maxCommands: z.number().int().min(1).max(500).default(25),
    /** Wall-clock budget of one task. @default 900000 (15 min) */
    budgetMs: z.number().int().min(1000).max(24 * 3600 * 1000).default(15 * 60_000),
    /** Network of task containers. @default bridge */
    network: z.enum(['none', 'bridge']).default('bridge'),
  }).strict().default({}),
}).strict();

/** The input form: every field optional, sizes as strings or numbers. */
export type ConfigInput = z.input<typeof ConfigSchema>;

/** Fully resolved configuration: every default applied, paths absolute, sizes in bytes. */
export type Config = Omit<z.output<typeof ConfigSchema>, 'logs'> & {
  /** `dir` absolute, the default applied. */
  logs: z.output<typeof ConfigSchema>['logs'] & { dir: string };
  /** Project root: the folder of `.genaicoderc` if one is found upward, else the working directory. */
  projectRoot: string;
  /** Where each value came from, for `doctor`. */
  sources: string[];
};

/** Environment variables and the config path each one sets. */
const ENV_KEYS: Record<string, { path: string[]; kind: 'string' | 'number' | 'boolean' | 'list' }> = {
  HOST: { path: ['engine', 'host'], kind: 'string' },
  SOCKET_PATH: { path: ['engine', 'socketPath'], kind: 'string' },
  IMAGE: { path: ['images', 'default'], kind: 'string' },
  ALLOWED_IMAGES: { path: ['images', 'allow'], kind: 'list' },
  PULL: { path: ['images', 'pull'], kind: 'boolean' },
  MEMORY: { path: ['limits', 'memory'], kind: 'string' },
  CPUS: { path: ['limits', 'cpus'], kind: 'number' },
  PIDS: { path: ['limits', 'pids'], kind: 'number' },
  NETWORK: { path: ['network'], kind: 'string' },
  READ_ONLY_ROOT: { path: ['readOnlyRoot'], kind: 'boolean' },
  USER: { path: ['user'], kind: 'string' },
  TTL_SECONDS: { path: ['ttlSeconds'], kind: 'number' },
  TIMEOUT_MS: { path: ['exec', 'timeoutMs'], kind: 'number' },
  MAX_BYTES: { path: ['exec', 'maxBytes'], kind: 'number' },
  MAX_LINES: { path: ['exec', 'maxLines'], kind: 'number' },
  LOG_DIR: { path: ['logs', 'dir'], kind: 'string' },
  CONFIRM_START: { path: ['plugin', 'confirmStart'], kind: 'boolean' },
  TASK_MAX_COMMANDS: { path: ['task', 'maxCommands'], kind: 'number' },
  TASK_BUDGET_MS: { path: ['task', 'budgetMs'], kind: 'number' },
  CONFIG: { path: [], kind: 'string' }, // path of the JSON file; handled apart
};

function fromEnv(env: NodeJS.ProcessEnv): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, raw] of Object.entries(env)) {
    if (!name.startsWith(ENV_PREFIX) || raw === undefined) continue;
    const key = name.slice(ENV_PREFIX.length);
    const spec = ENV_KEYS[key];
    if (!spec) {
      throw new SandboxError('INVALID_CONFIG', `Unknown environment variable ${name}; known: ${Object.keys(ENV_KEYS).map((k) => ENV_PREFIX + k).join(', ')}.`);
    }
    if (spec.path.length === 0) continue;
    let value: unknown = raw;
    if (spec.kind === 'number') {
      value = Number(raw);
      if (raw.trim() === '' || !Number.isFinite(value)) {
        throw new SandboxError('INVALID_CONFIG', `${name} must be a number, got ${JSON.stringify(raw)}.`);
      }
    } else if (spec.kind === 'boolean') {
      if (!/^(1|0|true|false|yes|no)$/i.test(raw)) {
        throw new SandboxError('INVALID_CONFIG', `${name} must be true or false, got ${JSON.stringify(raw)}.`);
      }
      value = /^(1|true|yes)$/i.test(raw);
    } else if (spec.kind === 'list') {
      value = raw.split(',').map((s) => s.trim()).filter(Boolean);
    }
    setPath(out, spec.path, value);
  }
  return out;
}

function setPath(target: Record<string, unknown>, path: string[], value: unknown): void {
  let node = target;
  for (const key of path.slice(0, -1)) {
    const next = node[key];
    if (typeof next !== 'object' || next === null) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[path[path.length - 1]!] = value;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Deep merge where later sources win; arrays are replaced, not concatenated. */
export function mergeConfig(...layers: unknown[]): Record<string, unknown> {
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
export function findProjectRoot(cwd: string): string {
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

/** The variable that sets a config path, so an error from the environment names what the user set. */
function envVarFor(path: ReadonlyArray<string | number>): string | undefined {
  const key = Object.entries(ENV_KEYS).find(([, spec]) => spec.path.length > 0 && spec.path.join('.') === path.join('.'))?.[0];
  return key ? ENV_PREFIX + key : undefined;
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

/** Where logs go unless configured: the user's state folder (XDG), outside every project. */
export function defaultLogsDir(env: NodeJS.ProcessEnv = process.env): string {
  const state = env.XDG_STATE_HOME && isAbsolute(env.XDG_STATE_HOME) ? env.XDG_STATE_HOME : join(homedir(), '.local', 'state');
  return join(state, 'genaicode-docker', 'logs');
}

/** The real path of `p`, through its deepest existing ancestor (the rest may not exist yet). */
function realPathOf(p: string): string {
  const missing: string[] = [];
  let dir = resolve(p);
  for (;;) {
    try {
      return join(realpathSync(dir), ...missing.reverse());
    } catch {
      const parent = dirname(dir);
      if (parent === dir) return resolve(p);
      missing.push(basename(dir));
      dir = parent;
    }
  }
}

function isWithin(child: string, parent: string): boolean {
  const rel = relative(parent, child);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

/**
 * A logs folder is pruned of old sessions, so it must never be (or hold) a folder of the
 * user's: not the project root or any folder above it, not the home folder or above, not /.
 * A checked-in .genaicode-docker.json is read from whatever repository GenAIcode opens.
 * @throws SandboxError INVALID_CONFIG naming the source that set it.
 */
function checkLogsDir(logsDir: string, projectRoot: string, source: string, writableMounts: string[]): void {
  const real = realPathOf(logsDir);
  // Lexically or really inside a folder a container may write: a link on the way there
  // could be turned by that container to point anywhere.
  for (const mount of writableMounts) {
    for (const m of new Set([mount, realPathOf(mount)])) {
      if (isWithin(logsDir, m) || isWithin(real, m) || isWithin(m, real)) {
        throw new SandboxError(
          'INVALID_CONFIG',
          `Invalid configuration: ${source}: logs.dir ${JSON.stringify(logsDir)} and the writable mountAllow entry ${m} overlap; a container with that folder mounted could reach the logs. Put the logs elsewhere.`,
          { data: { field: 'logs.dir' } },
        );
      }
    }
  }
  const guarded: Array<[string, string]> = [
    [realPathOf(projectRoot), 'the project root'],
    [realPathOf(homedir()), 'the home folder'],
    ['/', 'the root folder'],
  ];
  for (const [path, what] of guarded) {
    if (isWithin(path, real)) {
      throw new SandboxError(
        'INVALID_CONFIG',
        `Invalid configuration: ${source}: logs.dir ${JSON.stringify(logsDir)} ${real === path ? 'is' : 'contains'} ${what} (${path}); old logs are deleted from that folder, so it must be a folder of its own, e.g. ${defaultLogsDir()}.`,
        { data: { field: 'logs.dir' } },
      );
    }
  }
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
 * Resolves the configuration once. Sources, later wins: defaults, `.genaicode-docker.json`
 * (next to `.genaicoderc`, else in the working directory, or $GENAICODE_DOCKER_CONFIG),
 * environment GENAICODE_DOCKER_*, then `overrides`.
 * @throws SandboxError INVALID_CONFIG naming the field and the expected value;
 *         POLICY_VIOLATION when a value breaks a security invariant.
 */
export function loadConfig(options: LoadConfigOptions = {}): Config {
  const cwd = resolve(options.cwd ?? process.cwd());
  const env = options.env ?? process.env;
  const projectRoot = findProjectRoot(cwd);
  const sources: string[] = ['defaults'];
  const layers: Array<{ name: string; value: unknown }> = [];

  const explicitFile = env[`${ENV_PREFIX}CONFIG`];
  const candidates = explicitFile
    ? [resolve(cwd, explicitFile)]
    : [join(projectRoot, CONFIG_FILE_NAME), join(cwd, CONFIG_FILE_NAME)];
  const file = candidates.find((p) => existsSync(p));
  if (explicitFile && !file) {
    throw new SandboxError('INVALID_CONFIG', `${ENV_PREFIX}CONFIG points to ${candidates[0]}, which does not exist.`);
  }
  if (file) layers.push({ name: file, value: readConfigFile(file) });
  const envLayer = fromEnv(env);
  if (Object.keys(envLayer).length > 0) layers.push({ name: 'environment', value: envLayer });
  if (options.overrides) layers.push({ name: 'options', value: options.overrides });

  // Each layer is checked on its own first, so an error names the source that caused it.
  for (const layer of layers) {
    checkConfigInvariants(layer.value, layer.name, projectRoot);
    const partial = ConfigSchema.safeParse(layer.value);
    if (!partial.success) {
      throw new SandboxError('INVALID_CONFIG', `Invalid configuration: ${partial.error.issues.map((i) => formatIssue(i, layer.name)).join('; ')}.`);
    }
    sources.push(layer.name);
  }
  const merged = ConfigSchema.parse(mergeConfig(...layers.map((l) => l.value)));
  const logsSource = [...layers].reverse().find((l) => isPlainObject(l.value) && isPlainObject(l.value.logs) && l.value.logs.dir !== undefined)?.name;
  const logsDir = merged.logs.dir === undefined ? defaultLogsDir(env) : resolve(projectRoot, merged.logs.dir);
  checkLogsDir(logsDir, projectRoot, logsSource ?? 'defaults', merged.mountAllow.filter((m) => m.writable).map((m) => resolve(projectRoot, m.hostPath)));
  const mountAllow = merged.mountAllow.map((m) => ({ ...m, hostPath: resolve(projectRoot, m.hostPath) }));
  // Resolved once: the mount checks and the log store see the same real folder.
  return { ...merged, logs: { ...merged.logs, dir: realPathOf(logsDir) }, mountAllow, projectRoot, sources };
}
