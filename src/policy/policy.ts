import { isAbsolute, resolve } from 'node:path';
import picomatch from 'picomatch';
import { SandboxError } from '../errors.js';
import { isWithin, realPathOf } from '../paths.js';
import { namesRegistry, parseImageReference } from './image-ref.js';

/**
 * Security rules. The invariants here are not configurable; values that break them are
 * rejected with POLICY_VIOLATION naming the rule, never silently changed.
 */
export const INVARIANTS = {
  noPrivileged: 'containers never run privileged',
  noHostNamespaces: 'containers never share the host network, PID, IPC or UTS namespace',
  noDevices: 'no host device is ever passed into a container',
  noEngineMount: 'the engine socket and engine paths are never mounted into a container',
  noNewPrivileges: 'no-new-privileges is always set',
  capabilities: 'capabilities beyond the addable set are never granted',
  mountAllowlist: 'only host paths on the mount allowlist may be mounted, read-only unless allowed writable',
  logsOutsideMounts: 'the log folder is never inside a writable mount',
  noRootWithWritableMounts: 'with a writable mount, containers run as a non-root user unless allowRootWithWritableMounts is set',
  localHostPaths:
    "host folders (the project, mounts) are mounted only by an engine on this machine: a remote engine's paths are its own machine's",
  projectMount: 'the project is mounted no more widely than project.mount allows',
  protectedProjectPaths:
    "with a writable project mount, the container never writes the host's tree: its changes are applied by the plugin, checked, and files the host runs by itself are held back for the user",
} as const;

/**
 * How the project may be mounted, least first: not at all, read-only, `scratch` (the
 * container writes an overlay of the project that is thrown away: the host never sees a
 * write), `rw` (the container's changes are applied to the project, checked).
 */
export const PROJECT_MOUNTS = ['none', 'ro', 'scratch', 'rw'] as const;
export type ProjectMount = (typeof PROJECT_MOUNTS)[number];

/**
 * The mount a request gets: what it asks, or the configured mount when it asks nothing.
 * @throws SandboxError POLICY_VIOLATION when it asks more than `allowed`.
 */
export function checkProjectMount(requested: ProjectMount | undefined, allowed: ProjectMount): ProjectMount {
  if (requested === undefined) return allowed;
  if (PROJECT_MOUNTS.indexOf(requested) > PROJECT_MOUNTS.indexOf(allowed))
    throw violation(
      'projectMount',
      // Said so that the person reading it knows where the limit is set: only their own
      // configuration raises it (a project's file may only lower it).
      `project mount ${requested} (project.mount allows at most ${allowed}; the user raises it in their own configuration, "project": { "mount": "${requested}" }, or with GENAICODE_DOCKER_PROJECT_MOUNT=${requested})`,
    );
  return requested;
}

function violation(rule: keyof typeof INVARIANTS, detail: string): SandboxError {
  return new SandboxError('POLICY_VIOLATION', `${detail}: not allowed (${INVARIANTS[rule]}).`, { data: { rule } });
}

/** Keys that would break an invariant if honoured, and the rule each breaks. */
const FORBIDDEN_KEYS: Record<string, keyof typeof INVARIANTS> = {
  privileged: 'noPrivileged',
  pid: 'noHostNamespaces',
  pidMode: 'noHostNamespaces',
  ipc: 'noHostNamespaces',
  ipcMode: 'noHostNamespaces',
  uts: 'noHostNamespaces',
  utsMode: 'noHostNamespaces',
  devices: 'noDevices',
  securityOpt: 'noNewPrivileges',
  noNewPrivileges: 'noNewPrivileges',
};

/** The networks a container may have: none (loopback only) or the engine's bridge; never the host's. */
export const NETWORK_MODES = ['none', 'bridge'] as const;
export type NetworkMode = (typeof NETWORK_MODES)[number];

/**
 * Capabilities. Every container drops all of them and gets back BASE_CAPABILITIES plus
 * what the configuration's `capAdd` names from ADDABLE_CAPABILITIES (the rest of Docker's
 * default set). Anything else, above all what would lift the sandbox, is refused by name
 * (DANGEROUS_CAPS) with POLICY_VIOLATION, before the schema would call it merely unknown.
 */
export const BASE_CAPABILITIES = ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'SETGID', 'SETUID'] as const;
export const ADDABLE_CAPABILITIES = ['AUDIT_WRITE', 'MKNOD', 'NET_BIND_SERVICE', 'NET_RAW', 'SETFCAP', 'SETPCAP', 'SYS_CHROOT'] as const;
export type AddableCapability = (typeof ADDABLE_CAPABILITIES)[number];
const DANGEROUS_CAPS =
  /^(CAP_)?(SYS_ADMIN|SYS_MODULE|SYS_PTRACE|SYS_RAWIO|SYS_BOOT|SYS_TIME|NET_ADMIN|DAC_READ_SEARCH|SYS_RESOURCE|MAC_ADMIN|MAC_OVERRIDE|SYSLOG|BPF|PERFMON|ALL|LINUX_IMMUTABLE|BLOCK_SUSPEND|WAKE_ALARM|IPC_LOCK|IPC_OWNER|LEASE|AUDIT_CONTROL|AUDIT_READ|SYS_PACCT|SYS_NICE|SYS_TTY_CONFIG|CHECKPOINT_RESTORE)$/i;

/** The capabilities a container gets: the base set and the configured additions, once each. */
export function containerCapabilities(capAdd: readonly AddableCapability[]): string[] {
  return [...new Set<string>([...BASE_CAPABILITIES, ...capAdd])];
}

/**
 * Checks a raw configuration layer (or start request) for values that would break an
 * invariant, before schema validation, so the error names the rule and not a field shape.
 */
export function checkConfigInvariants(raw: unknown, source: string, baseDir: string = process.cwd()): void {
  if (typeof raw !== 'object' || raw === null) return;
  const obj = raw as Record<string, unknown>;
  for (const [key, rule] of Object.entries(FORBIDDEN_KEYS)) {
    if (key in obj && obj[key] !== undefined && obj[key] !== false) {
      throw violation(rule, `${source}: ${key}=${JSON.stringify(obj[key])}`);
    }
  }
  for (const key of ['network', 'networkMode']) {
    const v = obj[key];
    if (typeof v === 'string' && (v === 'host' || v.startsWith('container:') || v.startsWith('ns:'))) {
      throw violation('noHostNamespaces', `${source}: ${key}=${JSON.stringify(v)}`);
    }
  }
  if (Array.isArray(obj.capAdd)) {
    for (const cap of obj.capAdd) {
      if (typeof cap === 'string' && DANGEROUS_CAPS.test(cap)) throw violation('capabilities', `${source}: capAdd ${cap}`);
    }
  }
  if (Array.isArray(obj.mountAllow)) {
    for (const m of obj.mountAllow) {
      const p = (m as { hostPath?: unknown } | null)?.hostPath;
      // Resolved first: a link to / (or to an engine path) is what it points at.
      if (typeof p === 'string' && touchesEnginePath(realPathOf(resolve(baseDir, p))))
        throw violation('noEngineMount', `${source}: mountAllow ${p}`);
    }
  }
  if (typeof obj.task === 'object' && obj.task !== null) checkConfigInvariants(obj.task, `${source} task`, baseDir);
}

/** Paths of container engines; mounting any of them (or a folder holding one) hands over the host. */
const ENGINE_PATHS = [
  '/var/run/docker.sock',
  '/run/docker.sock',
  '/var/run/docker',
  '/run/docker',
  '/var/lib/docker',
  '/run/containerd',
  '/var/run/containerd',
  '/var/lib/containerd',
  '/run/podman',
  '/var/run/podman',
  '/var/lib/containers',
  '/run/crio',
  '/var/run/crio',
  '/proc',
  '/sys',
  '/dev',
  '/boot',
];
/** Rootless engines keep their sockets in the user's runtime folder: inside one of these is forbidden... */
const USER_ENGINE_PATH = /^\/(?:var\/)?run\/user\/\d+\/(?:docker\.sock|docker|podman|containerd)(?:\/|$)/;
/** ...and so is any folder that holds one (/run/user, /run/user/1000, and their parents). */
const USER_RUNTIME_DIR = /^\/(?:var\/)?run\/user(?:\/\d+)?\/?$/;

/** True if `path` is an engine path, lies inside one, or contains one. */
export function touchesEnginePath(path: string, extra: string[] = []): boolean {
  if (USER_ENGINE_PATH.test(path) || USER_RUNTIME_DIR.test(path) || isWithin('/run/user', path) || isWithin('/var/run/user', path))
    return true;
  return [...ENGINE_PATHS, ...extra].some((e) => isWithin(path, e) || isWithin(e, path));
}

/** Docker's container name rule, kept to 63 characters (a host name label). */
const CONTAINER_NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$/;

/** Why `name` cannot be a container name, or undefined when it can. */
export function containerNameProblem(name: string): string | undefined {
  return CONTAINER_NAME.test(name) ? undefined : 'use letters, digits, _ . - (at most 63, starting with a letter or digit)';
}

/** @throws SandboxError INVALID_ARGUMENT for a name Docker would refuse (before any engine call or question). */
export function checkContainerName(name: string): void {
  const problem = containerNameProblem(name);
  if (problem) {
    throw new SandboxError(
      'INVALID_ARGUMENT',
      `Container name ${JSON.stringify(name.length > 80 ? `${name.slice(0, 80)}…` : name)} is not valid: ${problem}.`,
    );
  }
}

/** Adds the implicit `:latest` so `python` and `python:latest` match the same patterns. */
export function normalizeImageRef(ref: string): string {
  const lastSlash = ref.lastIndexOf('/');
  const hasTag = ref.slice(lastSlash + 1).includes(':') || ref.includes('@');
  return hasTag ? ref : `${ref}:latest`;
}

/**
 * One spelling per image, so a pattern cannot be sidestepped by another name for the same
 * registry: the registry host in lower case, without the default HTTPS port, and Docker
 * Hub's names and implicit prefixes dropped (`Index.Docker.io:443/library/python:3` ->
 * `python:3`).
 */
function shortImageRef(ref: string): string {
  const slash = ref.indexOf('/');
  const first = slash === -1 ? '' : ref.slice(0, slash);
  let rest = ref;
  if (first && namesRegistry(first)) {
    const host = first.toLowerCase().replace(/:443$/, '');
    rest = ['docker.io', 'index.docker.io', 'registry-1.docker.io', 'registry.hub.docker.com'].includes(host)
      ? ref.slice(slash + 1)
      : `${host}${ref.slice(slash)}`;
  }
  return rest.replace(/^library\//, '');
}

/**
 * Checks an image against the allowlist (glob patterns; `*` stays within one path segment,
 * `**` crosses them). `docker.io/library/x` and `x` are the same image. The reference is
 * checked against Docker's grammar first, so no pattern can admit a malformed one.
 * @throws SandboxError INVALID_ARGUMENT for a malformed reference; IMAGE_NOT_ALLOWED; both
 *         before any engine call.
 */
export function checkImageAllowed(image: string, allow: readonly string[], projectAllow?: readonly string[]): void {
  parseImageReference(image);
  if (projectAllow && imageMatches(image, allow) && !imageMatches(image, projectAllow)) {
    throw new SandboxError(
      'IMAGE_NOT_ALLOWED',
      `Image ${image} is not on this project's image allowlist (${projectAllow.join(', ') || 'empty'}), which narrows the allowlist in force.`,
      { data: { image, allowed: [...projectAllow] } },
    );
  }
  if (imageMatches(image, allow)) return;
  throw new SandboxError(
    'IMAGE_NOT_ALLOWED',
    `Image ${image} is not on the image allowlist (${allow.join(', ') || 'empty'}). Use an allowed image, or add a pattern to images.allow in .genaicode-docker.json.`,
    { data: { image, allowed: [...allow] } },
  );
}

/**
 * Whether an image matches one of the glob patterns (`*` within one path segment, `**`
 * across them), with Docker Hub's implicit prefixes and `:latest` taken into account.
 */
export function imageMatches(image: string, patterns: readonly string[]): boolean {
  if (patterns.length === 0) return false;
  const ref = shortImageRef(normalizeImageRef(image));
  const forms = [ref, ref.replace(/:latest$/, '')];
  // Patterns get the same short form, so `docker.io/library/python:*` and `python:*` are one rule.
  const isMatch = picomatch(patterns.map(shortImageRef), { dot: true });
  return forms.some((f) => isMatch(f));
}

export interface MountRequest {
  hostPath: string;
  containerPath: string;
  /** @default false */
  writable?: boolean;
}

interface MountRule {
  hostPath: string;
  writable: boolean;
}

interface MountCheckOptions {
  /** The engine's socket: never mountable, wherever it is. */
  engineSocket?: string;
  /** The log folder: never inside (or holding) a writable mount, or a container could plant links there. */
  logsDir?: string;
}

/**
 * Checks requested bind mounts against the allowlist and the invariants. Every path, the
 * request's and each rule's, is resolved with realpath before any rule is applied, so a
 * link can neither smuggle in a forbidden path nor stretch a rule beyond what it names: a
 * rule whose real path is itself forbidden (a link to /) allows nothing.
 */
export function checkMounts(
  requests: readonly MountRequest[],
  rules: readonly MountRule[],
  options: MountCheckOptions = {},
): Array<Required<MountRequest>> {
  const extra = options.engineSocket ? [realPathOf(options.engineSocket)] : [];
  const realRules = rules
    .map((r) => ({ hostPath: realPathOf(r.hostPath), writable: r.writable }))
    .filter((r) => !touchesEnginePath(r.hostPath, extra));
  const logsDir = options.logsDir ? realPathOf(options.logsDir) : undefined;
  return requests.map((m) => {
    if (!isAbsolute(m.containerPath)) {
      throw new SandboxError(
        'INVALID_ARGUMENT',
        `Mount target ${JSON.stringify(m.containerPath)} must be an absolute path in the container.`,
      );
    }
    const host = realPathOf(m.hostPath);
    if (touchesEnginePath(host, extra)) throw violation('noEngineMount', `mount of ${m.hostPath}`);
    const rule = realRules.find((r) => isWithin(host, r.hostPath));
    if (!rule) throw violation('mountAllowlist', `mount of ${m.hostPath} (not on the mount allowlist)`);
    if (m.writable && !rule.writable) throw violation('mountAllowlist', `writable mount of ${m.hostPath} (allowed read-only only)`);
    if (m.writable && logsDir && (isWithin(logsDir, host) || isWithin(host, logsDir))) {
      throw violation(
        'logsOutsideMounts',
        `writable mount of ${m.hostPath} (the log folder ${logsDir} is inside it; set logs.dir elsewhere or mount read-only)`,
      );
    }
    return { hostPath: host, containerPath: m.containerPath, writable: m.writable ?? false };
  });
}
