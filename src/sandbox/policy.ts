import { realpathSync } from 'node:fs';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import picomatch from 'picomatch';
import { SandboxError } from '../errors.js';

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
} as const;

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

const DANGEROUS_CAPS = /^(CAP_)?(SYS_ADMIN|SYS_MODULE|SYS_PTRACE|SYS_RAWIO|SYS_BOOT|SYS_TIME|NET_ADMIN|DAC_READ_SEARCH|SYS_RESOURCE|MAC_ADMIN|MAC_OVERRIDE|SYSLOG|BPF|PERFMON|ALL|LINUX_IMMUTABLE|BLOCK_SUSPEND|WAKE_ALARM|IPC_LOCK|IPC_OWNER|LEASE|AUDIT_CONTROL|AUDIT_READ|SYS_PACCT|SYS_NICE|SYS_TTY_CONFIG|CHECKPOINT_RESTORE)$/i;

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
      if (typeof p === 'string' && touchesEnginePath(resolve(baseDir, p))) throw violation('noEngineMount', `${source}: mountAllow ${p}`);
    }
  }
  if (typeof obj.task === 'object' && obj.task !== null) checkConfigInvariants(obj.task, `${source} task`, baseDir);
}

/** Paths of container engines; mounting any of them (or a folder holding one) hands over the host. */
const ENGINE_PATHS = [
  '/var/run/docker.sock', '/run/docker.sock', '/var/run/docker', '/run/docker', '/var/lib/docker',
  '/run/containerd', '/var/run/containerd', '/var/lib/containerd', '/run/podman', '/var/run/podman',
  '/var/lib/containers', '/run/crio', '/var/run/crio', '/proc', '/sys', '/dev', '/boot',
];
/** Rootless engines keep their sockets in the user's runtime folder: inside one of these is forbidden... */
const USER_ENGINE_PATH = /^\/(?:var\/)?run\/user\/\d+\/(?:docker\.sock|docker|podman|containerd)(?:\/|$)/;
/** ...and so is any folder that holds one (/run/user, /run/user/1000, and their parents). */
const USER_RUNTIME_DIR = /^\/(?:var\/)?run\/user(?:\/\d+)?\/?$/;

function within(child: string, parent: string): boolean {
  const rel = relative(parent, child);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

/** True if `path` is an engine path, lies inside one, or contains one. */
export function touchesEnginePath(path: string, extra: string[] = []): boolean {
  if (USER_ENGINE_PATH.test(path) || USER_RUNTIME_DIR.test(path) || within('/run/user', path) || within('/var/run/user', path)) return true;
  return [...ENGINE_PATHS, ...extra].some((e) => within(path, e) || within(e, path));
}

/** Adds the implicit `:latest` so `python` and `python:latest` match the same patterns. */
export function normalizeImageRef(ref: string): string {
  const lastSlash = ref.lastIndexOf('/');
  const hasTag = ref.slice(lastSlash + 1).includes(':') || ref.includes('@');
  return hasTag ? ref : `${ref}:latest`;
}

/** Docker Hub's implicit prefixes dropped: `docker.io/library/python:3` -> `python:3`. */
function shortImageRef(ref: string): string {
  return ref.replace(/^(?:docker\.io|index\.docker\.io|registry-1\.docker\.io)\//, '').replace(/^library\//, '');
}

/**
 * Checks an image against the allowlist (glob patterns; `*` stays within one path segment,
 * `**` crosses them). `docker.io/library/x` and `x` are the same image.
 * @throws SandboxError IMAGE_NOT_ALLOWED, before any engine call.
 */
export function checkImageAllowed(image: string, allow: readonly string[]): void {
  if (!/^[a-z0-9][a-z0-9._\-/:@]*$/i.test(image) || image.length > 255) {
    throw new SandboxError('INVALID_ARGUMENT', `${JSON.stringify(image)} is not a valid image reference.`, { data: { image } });
  }
  const ref = shortImageRef(normalizeImageRef(image));
  const forms = [ref, ref.replace(/:latest$/, '')];
  // Patterns get the same short form, so `docker.io/library/python:*` and `python:*` are one rule.
  const isMatch = picomatch(allow.map(shortImageRef), { dot: true });
  if (forms.some((f) => isMatch(f))) return;
  throw new SandboxError(
    'IMAGE_NOT_ALLOWED',
    `Image ${image} is not on the image allowlist (${allow.join(', ') || 'empty'}). Use an allowed image, or add a pattern to images.allow in .genaicode-docker.json.`,
    { data: { image, allowed: [...allow] } },
  );
}

export interface MountRequest {
  hostPath: string;
  containerPath: string;
  /** @default false */
  writable?: boolean;
}

export interface MountRule {
  hostPath: string;
  writable: boolean;
}

function realpathOrResolve(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return resolve(p);
  }
}

/**
 * Checks requested bind mounts against the allowlist and the engine-path invariant.
 * Symlinks are resolved first, so a link cannot smuggle in a forbidden path.
 */
export function checkMounts(requests: readonly MountRequest[], rules: readonly MountRule[], engineSocket?: string): Array<Required<MountRequest>> {
  return requests.map((m) => {
    if (!isAbsolute(m.containerPath)) {
      throw new SandboxError('INVALID_ARGUMENT', `Mount target ${JSON.stringify(m.containerPath)} must be an absolute path in the container.`);
    }
    const host = realpathOrResolve(m.hostPath);
    if (touchesEnginePath(host, engineSocket ? [realpathOrResolve(engineSocket)] : [])) {
      throw violation('noEngineMount', `mount of ${m.hostPath}`);
    }
    const rule = rules.find((r) => within(host, realpathOrResolve(r.hostPath)));
    if (!rule) throw violation('mountAllowlist', `mount of ${m.hostPath} (not on the mount allowlist)`);
    if (m.writable && !rule.writable) throw violation('mountAllowlist', `writable mount of ${m.hostPath} (allowed read-only only)`);
    return { hostPath: host, containerPath: m.containerPath, writable: m.writable ?? false };
  });
}
