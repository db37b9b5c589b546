import { SandboxError } from '../errors.js';
import { ENV_PREFIX } from './config-schema.js';
import { LANGUAGES } from './languages.js';

/** The GENAICODE_DOCKER_* variables: each one's setting, read into a configuration layer. */

/** Environment variables and the config path each one sets. */
const ENV_KEYS: Record<string, { path: string[]; kind: 'string' | 'number' | 'boolean' | 'list' }> = {
  HOST: { path: ['engine', 'host'], kind: 'string' },
  SOCKET_PATH: { path: ['engine', 'socketPath'], kind: 'string' },
  SSH_CONFIG: { path: ['engine', 'ssh', 'configFile'], kind: 'string' },
  SSH_REMOTE_SOCKET: { path: ['engine', 'ssh', 'remoteSocket'], kind: 'string' },
  ROOTLESS_WITHOUT_LIMITS: { path: ['engine', 'rootlessWithoutLimits'], kind: 'boolean' },
  IMAGE: { path: ['images', 'default'], kind: 'string' },
  ALLOWED_IMAGES: { path: ['images', 'allow'], kind: 'list' },
  PULL: { path: ['images', 'pull'], kind: 'boolean' },
  REGISTRY: { path: ['images', 'registry'], kind: 'string' },
  // GENAICODE_DOCKER_IMAGE_PYTHON, ..._NODEJS, ...: each language's image.
  ...Object.fromEntries(LANGUAGES.map((l) => [`IMAGE_${l.toUpperCase()}`, { path: ['images', 'languages', l], kind: 'string' as const }])),
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
  KEPT_SHELL: { path: ['exec', 'keptShell'], kind: 'boolean' },
  LOG_DIR: { path: ['logs', 'dir'], kind: 'string' },
  CONFIRM_START: { path: ['plugin', 'confirmStart'], kind: 'boolean' },
  TASK_MAX_COMMANDS: { path: ['task', 'maxCommands'], kind: 'number' },
  TASK_BUDGET_MS: { path: ['task', 'budgetMs'], kind: 'number' },
  PROJECT_MOUNT: { path: ['project', 'mount'], kind: 'string' },
  SWEEP_INTERVAL_MINUTES: { path: ['sweepIntervalMinutes'], kind: 'number' },
  CONFIG: { path: [], kind: 'string' }, // path of the JSON file; handled apart
};

export function fromEnv(env: NodeJS.ProcessEnv): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, raw] of Object.entries(env)) {
    if (!name.startsWith(ENV_PREFIX) || raw === undefined) continue;
    const key = name.slice(ENV_PREFIX.length);
    const spec = ENV_KEYS[key];
    if (!spec) {
      throw new SandboxError(
        'INVALID_CONFIG',
        `Unknown environment variable ${name}; known: ${Object.keys(ENV_KEYS)
          .map((k) => ENV_PREFIX + k)
          .join(', ')}.`,
      );
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
      value = raw
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
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

/** The variable that sets a config path, so an error from the environment names what the user set. */
export function envVarFor(path: ReadonlyArray<string | number>): string | undefined {
  const key = Object.entries(ENV_KEYS).find(([, spec]) => spec.path.length > 0 && spec.path.join('.') === path.join('.'))?.[0];
  return key ? ENV_PREFIX + key : undefined;
}
