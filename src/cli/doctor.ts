import { isAbsolute, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Config } from '../config/config-schema.js';
import { createEngine } from '../engine/create-engine.js';
import { KubernetesEngine } from '../engine/kubernetes/kubernetes-engine.js';
import { kubernetesLines } from './doctor-kubernetes.js';
import type { EngineConnection } from '../engine/connection.js';
import { sshCommandLine } from '../engine/ssh-errors.js';
import type { EngineInfo } from '../engine/container-engine.js';
import { displayText as t } from '../display-text.js';
import { isSandboxError } from '../errors.js';
import { imageMatches } from '../policy/policy.js';
import { BUILD_OFFLINE_SCRIPT, SandboxManager } from '../sandbox/sandbox-manager.js';
import { formatBytes } from './format.js';
import { hostProfile, locateHost } from '../prompt/host/host-profile.js';
import { existsSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';

/** The `genaicode` command on the PATH, if any: a global or linked install is the usual 1.x set-up. */
function genaicodeOnPath(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const candidate = join(dir, 'genaicode');
    if (dir && existsSync(candidate)) return candidate;
  }
  return undefined;
}

/**
 * Which GenAIcode the plugin would run in: the project's own, else the one beside this
 * package, else the `genaicode` command. Says plainly when it is npm's 2.x toolkit, which
 * loads no plugins, and what a 1.x user should know.
 */
export function hostLine(cwd: string): string {
  const script = genaicodeOnPath();
  const pkg =
    locateHost({ cwd }) ??
    locateHost({ pluginDir: dirname(fileURLToPath(import.meta.url)) }) ??
    (script ? locateHost({ script }) : undefined);
  if (!pkg)
    return 'host         no GenAIcode found (the project, beside this package, or `genaicode` on the PATH): the CLI and the library work without one';
  const profile = hostProfile(pkg);
  const where = `${profile.name} at ${t(pkg.root)}`;
  if (profile.notAnAgent)
    return `host         ${where} is the LLM toolkit (2.x), not the coding agent: it cannot load plugins. Use 0.9.5 (npm) or the 1.x line (built from source): see the README`;
  return (
    `host         ${where}: the model picks actions through ${profile.dispatcher}, ${profile.convention === 'config' ? 'calls models with a config object' : 'calls models with positional arguments'}` +
    (profile.builtinContainerTask
      ? '; it has a runContainerTask of its own, on whenever the engine answers: set "featuresEnabled": { "containerTask": false } in .genaicoderc so the model uses ours'
      : '')
  );
}

/** How the engine is reached, and what that means for host folders and writable projects. */
export function engineReach(
  conn: EngineConnection,
  kind: EngineInfo['kind'],
  host: Partial<Pick<EngineInfo, 'rootless' | 'cgroupVersion'>> = {},
  withoutLimits = false,
): string {
  if (conn.kind === 'tcp') {
    const how =
      conn.protocol === 'https'
        ? `TLS, certificates from ${t(conn.certPath ?? '')}`
        : 'plain HTTP, no TLS: anyone who reaches the port drives the engine';
    return `remote engine (${how}): project and host mounts are refused (its paths are its own machine's); files go in through the file actions`;
  }
  if (conn.kind === 'ssh') {
    const how =
      `through OpenSSH: \`${t(sshCommandLine(conn))}\` forwards its socket ${t(conn.remoteSocket)} to a private local one; ` +
      `host keys are checked against known_hosts, keys and agent as for ssh${conn.configFile ? ` (config ${t(conn.configFile)})` : ''}`;
    return `remote engine (${how}): project and host mounts are refused (its paths are its own machine's); files go in through the file actions`;
  }
  const local = `local engine on the socket ${t(conn.socketPath)}`;
  const rootlessPodman =
    "containers get keep-id (the engine's user is the same uid inside, where 'rw' and 'scratch' projects run; other containers run as their image's user); every project mount works, 'rw' and 'scratch' for the engine's own user";
  if (host.rootless && host.cgroupVersion === '1')
    return withoutLimits
      ? `${local}, rootless on cgroups v1: containers start WITHOUT memory, CPU and process limits (engine.rootlessWithoutLimits)${kind === 'podman' ? `; ${rootlessPodman}` : ''}`
      : `${local}, rootless on cgroups v1: it cannot enforce memory, CPU and process limits there, so every start is refused (use cgroups v2 or a rootful engine, or accept that with engine.rootlessWithoutLimits)`;
  if (host.rootless && kind === 'podman') return `${local} (rootless Podman): ${rootlessPodman}`;
  return kind === 'podman'
    ? process.getuid?.() === 0
      ? `${local} (Podman): every project mount works ('rw' and 'scratch' through a named overlay volume of its own API, removed with the container)`
      : `${local} (Podman): 'ro' project mounts work; 'rw' and 'scratch' need this process to run as root (Podman gives the overlay's upper folder to root)`
    : `${local}: every project mount works`;
}

const GOLDEN_IMAGES = ['genaicode-docker/sandbox-minimal:latest', 'genaicode-docker/sandbox-python:latest'];

/**
 * The limits in force. On a rootless engine on cgroups v1 that the operator lets start without
 * limits, the memory, CPU and process limits are configured but nothing enforces them: the line
 * says so, so that no one reads them as held.
 */
export function limitsLine(config: Config, unenforced: boolean): string {
  const line = `limits       memory ${formatBytes(config.limits.memory)}, disk ${formatBytes(config.limits.disk)}, cpus ${config.limits.cpus}, pids ${config.limits.pids}, network ${config.network}, read-only root ${config.readOnlyRoot ? 'yes' : 'no'}`;
  return unenforced
    ? `${line} (memory, cpus and pids NOT enforced on this engine: rootless on cgroups v1, engine.rootlessWithoutLimits)`
    : line;
}

/**
 * What this configuration trusts, one line each: which images may run and which of them may
 * come from a registry, what may be mounted and as whom, whether the user is asked first,
 * and where logs go.
 */
function trustLines(config: Config): string[] {
  const uid = process.getuid?.();
  const writableUser =
    config.user !== undefined
      ? `as user ${t(config.user)}`
      : uid === 0
        ? "as the mounted folder's non-root owner"
        : `as this user (${uid}:${process.getgid?.()})`;
  return [
    `images       allowed: ${t(config.images.allow.join(', ')) || '(none)'}${config.images.projectAllow ? `; narrowed by the project to ${t(config.images.projectAllow.join(', ')) || '(none)'}` : ''}`,
    `pulls        ${config.images.pull ? 'missing allowed images are pulled from their registry' : 'off: nothing is pulled'}; never pulled (built here): ${t(config.images.localOnly.join(', ')) || '(none)'}`,
    `mounts       allowed: ${config.mountAllow.map((m) => `${t(m.hostPath)}${m.writable ? ' (rw)' : ' (ro)'}`).join(', ') || '(none)'}; with a writable mount containers run ${writableUser}${config.allowRootWithWritableMounts ? ', or as root (allowRootWithWritableMounts)' : ', never as root'}`,
    `confirm      ${config.plugin.confirmStart ? 'the user is asked before each container starts' : 'containers start without asking the user (plugin.confirmStart: false)'}`,
    `logs         ${t(config.logs.dir)}${within(config.logs.dir, config.projectRoot) ? ' (inside the project: GenAIcode may send its .json files to the model as source)' : ''}`,
  ];
}

function within(child: string, parent: string): boolean {
  const rel = relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/** Checks that sandboxes can run here, and prints what is in force. Returns the exit code. */
export async function doctor(config: Config, options: { sandboxCheck: boolean }, out: (line: string) => void): Promise<number> {
  const engine = createEngine(config.engine);
  let problems = 0;
  let unenforced = false;
  out(hostLine(config.projectRoot));
  try {
    const info = await engine.info();
    out(
      `engine       ok: ${info.kind} ${t(info.version)} (API ${t(info.apiVersion)}, ${t(info.os)}${info.kind === 'kubernetes' ? '' : `, cgroups v${info.cgroupVersion}`}) at ${t(info.endpoint)}`,
    );
    const withoutLimits = config.engine.rootlessWithoutLimits === true;
    if (engine.connection) out(`             ${engineReach(engine.connection, info.kind, info, withoutLimits)}`);
    const rootlessV1 = info.rootless === true && info.cgroupVersion === '1';
    if (rootlessV1 && !withoutLimits) problems++;
    unenforced = rootlessV1 && withoutLimits;
  } catch (e) {
    out(`engine       UNUSABLE: ${t(e instanceof Error ? e.message : String(e), 2000)}`);
    return 1;
  }
  if (engine instanceof KubernetesEngine) {
    const cluster = await kubernetesLines(engine, config);
    for (const line of cluster.lines) out(line);
    problems += cluster.problems;
  }
  const images = engine instanceof KubernetesEngine ? [] : [...new Set([config.images.default, ...GOLDEN_IMAGES])];
  for (const image of images) {
    const present = await engine.hasImage(image);
    if (!present && image === config.images.default && !config.images.pull) problems++;
    out(
      `image        ${present ? 'present' : 'missing'}: ${t(image)}${present ? '' : imageMatches(image, config.images.localOnly) ? ` (never pulled; build: bash ${BUILD_OFFLINE_SCRIPT} ${t(image)}, or docker build -t ${t(image)} ${fileURLToPath(new URL(`../../docker/${image.split('/')[1]?.split(':')[0] ?? ''}`, import.meta.url))})` : config.images.pull ? ' (pulled on first use)' : ' (pulls are off: load it)'}`,
    );
  }
  out(limitsLine(config, unenforced));
  out(`lifetime     containers expire after ${config.ttlSeconds} s; commands time out after ${config.exec.timeoutMs} ms`);
  out(`output       ${formatBytes(config.exec.maxBytes)} / ${config.exec.maxLines} lines per stream kept for answers`);
  for (const line of trustLines(config)) out(line);
  out(`config       from ${t(config.sources.join(' < '), 2000)}`);
  if (options.sandboxCheck) {
    const manager = new SandboxManager({ config, engine });
    const t0 = performance.now();
    try {
      const sandbox = await manager.start({});
      const r = await sandbox.exec('echo ok', { timeoutMs: 10_000 });
      await sandbox.stop();
      const ok = r.exitCode === 0 && r.stdout.trim() === 'ok';
      if (!ok) problems++;
      out(
        `sandbox      ${ok ? 'ok' : 'FAILED'}: start, exec, stop of ${config.images.default} in ${Math.round(performance.now() - t0)} ms`,
      );
      out(
        manager.diskEnforcement === 'engine'
          ? `disk         the limit (${formatBytes(config.limits.disk)}) is enforced by the engine (a quota of the storage driver)`
          : `disk         the storage driver has no quota: the limit (${formatBytes(config.limits.disk)}) is measured every second while a command runs and at its end (best effort: writes between commands and deleted files still open are not seen), and the command stopped past it`,
      );
    } catch (e) {
      problems++;
      out(`sandbox      FAILED: ${t(isSandboxError(e) ? `${e.code}: ${e.message}` : String(e), 2000)}`);
    } finally {
      await manager.stopAll();
    }
  }
  return problems > 0 ? 1 : 0;
}
