import { SandboxError } from '../errors.js';
import { imageMatches, NETWORK_MODES, PROJECT_MOUNTS } from '../policy/policy.js';
import type { z } from 'zod';
import type { ConfigSchema } from './config-schema.js';

type Parsed = z.output<typeof ConfigSchema>;

/**
 * What a project's own `.genaicode-docker.json` may say. GenAIcode reads that file from
 * whatever repository it opens, so it is the repository's word, not the user's: it may tune
 * the sandbox the safer way (limits, timeouts, output sizes, no network, a read-only root,
 * codeExecute off, a tighter allowlist) but not decide whom to trust nor where logs go.
 * Those settings come only from the user's own config file
 * (`$XDG_CONFIG_HOME/genaicode-docker/config.json` or `$GENAICODE_DOCKER_CONFIG`), the
 * environment or options in code; a project file may only narrow them (its image allowlist
 * is kept apart and applied on top of the trusted one).
 *
 * Its numbers may only make the sandbox tighter than what the user (or the defaults) set:
 * a limit, an expiry, a timeout, a threshold, a retention or a log cap lower (a free-space
 * floor higher, a sweep more often, never off); no image it names may be one pulled from a
 * registry, and it may not start pulls. Its choices (network, read-only root, codeExecute on,
 * a kept-alive code sandbox, pulls, the project mount) may only move to the safer side of the
 * user's. Every setting it changed is listed, and the user is shown that list when asked to
 * start a container.
 */

/** Settings a project file may not set at all, with where they belong instead. */
const USER_ONLY: Array<{ path: string[]; why: string }> = [
  { path: ['engine'], why: 'which engine receives the commands' },
  { path: ['user'], why: 'who containers run as' },
  { path: ['publishPorts'], why: "which container ports the host's loopback reaches" },
  { path: ['allowRootWithWritableMounts'], why: 'whether a container may write host files as root' },
  { path: ['mountAllow'], why: 'which host folders may be mounted' },
  { path: ['codeExecute', 'mounts'], why: 'which host folders code sandboxes mount' },
  { path: ['images', 'registry'], why: 'which registry the language images are pulled from' },
  // The sweep trusts the overlay records it finds under the logs folder (each names a host
  // folder and an upper layer to apply onto it), and old sessions are deleted from it: a
  // repository that chose it could plant records applied onto any folder of the user's.
  { path: ['logs', 'dir'], why: 'where logs and overlay records are kept (the sweep trusts the records it finds there)' },
];

/**
 * Choices a project's file may only move towards the first, safer value (a network only to
 * none, codeExecute only off, a read-only root only on). Every one it changed is listed.
 */
const SAFER_FIRST: Array<{ path: string[]; order: readonly unknown[] }> = [
  { path: ['network'], order: NETWORK_MODES },
  { path: ['task', 'network'], order: NETWORK_MODES },
  { path: ['codeExecute', 'network'], order: NETWORK_MODES },
  { path: ['codeExecute', 'enabled'], order: [false, true] },
  // A kept-alive sandbox carries one snippet's files and processes into the next.
  { path: ['codeExecute', 'keepAlive'], order: [false, true] },
  { path: ['readOnlyRoot'], order: [true, false] },
  { path: ['images', 'pull'], order: [false, true] },
  { path: ['project', 'mount'], order: PROJECT_MOUNTS },
  { path: ['plugin', 'confirmStart'], order: [true, false] },
];

function get(obj: unknown, path: string[]): unknown {
  let node = obj;
  for (const key of path) {
    if (typeof node !== 'object' || node === null) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

function refuse(file: string, field: string, detail: string): SandboxError {
  return new SandboxError(
    'INVALID_CONFIG',
    `Invalid configuration: ${file}: ${field} ${detail}. A project's config file can tune the sandbox but not widen whom it trusts; ` +
      'set this in your own config (~/.config/genaicode-docker/config.json or $GENAICODE_DOCKER_CONFIG), the environment, or the plugin options.',
    { data: { field } },
  );
}

/**
 * The settings a project's file may only lower (`higher`: may only raise, the stricter way).
 * Each has a unit for the list the user sees.
 */
const CEILINGS: Array<{ path: string[]; unit: 'bytes' | ''; stricter?: 'higher' }> = [
  { path: ['limits', 'memory'], unit: 'bytes' },
  { path: ['limits', 'cpus'], unit: '' },
  { path: ['limits', 'pids'], unit: '' },
  { path: ['limits', 'disk'], unit: 'bytes' },
  { path: ['tmpfsSize'], unit: 'bytes' },
  { path: ['ttlSeconds'], unit: '' },
  { path: ['sweepIntervalMinutes'], unit: '' },
  { path: ['exec', 'timeoutMs'], unit: '' },
  { path: ['exec', 'maxBytes'], unit: 'bytes' },
  { path: ['exec', 'maxLines'], unit: '' },
  { path: ['plugin', 'summaryThresholdBytes'], unit: 'bytes' },
  { path: ['task', 'maxCommands'], unit: '' },
  { path: ['task', 'budgetMs'], unit: '' },
  { path: ['files', 'maxReadBytes'], unit: 'bytes' },
  { path: ['files', 'maxReadLines'], unit: '' },
  { path: ['files', 'maxWriteBytes'], unit: 'bytes' },
  { path: ['files', 'maxListEntries'], unit: '' },
  { path: ['files', 'maxListDepth'], unit: '' },
  { path: ['logs', 'maxTotalBytes'], unit: 'bytes' },
  { path: ['logs', 'maxAgeDays'], unit: '' },
  { path: ['logs', 'maxCommandBytes'], unit: 'bytes' },
  { path: ['logs', 'maxSessionBytes'], unit: 'bytes' },
  { path: ['logs', 'minFreeBytes'], unit: 'bytes', stricter: 'higher' },
  { path: ['codeExecute', 'memory'], unit: 'bytes' },
  { path: ['codeExecute', 'cpus'], unit: '' },
  { path: ['codeExecute', 'pids'], unit: '' },
  { path: ['codeExecute', 'tmpfsSize'], unit: 'bytes' },
  { path: ['codeExecute', 'timeoutSeconds'], unit: '' },
  { path: ['codeExecute', 'maxTimeoutSeconds'], unit: '' },
  { path: ['codeExecute', 'maxExecutions'], unit: '' },
  { path: ['codeExecute', 'idleTimeoutMinutes'], unit: '' },
  { path: ['codeExecute', 'maxOutputChars'], unit: '' },
  { path: ['codeExecute', 'maxCodeBytes'], unit: 'bytes' },
];

function shown(value: unknown, unit: 'bytes' | ''): string {
  if (unit === 'bytes' && typeof value === 'number') {
    for (const [u, size] of [
      ['GiB', 1024 ** 3],
      ['MiB', 1024 ** 2],
      ['KiB', 1024],
    ] as const)
      if (value >= size) return `${Number((value / size).toFixed(2))} ${u}`;
    return `${value} bytes`;
  }
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** The images a project's file names that would be pulled from a registry (not built here). */
function registryImages(layer: unknown, localOnly: readonly string[]): Array<{ field: string; image: string }> {
  const named: Array<{ field: string; image: string }> = [];
  const add = (field: string, v: unknown) => typeof v === 'string' && named.push({ field, image: v });
  add('images.default', get(layer, ['images', 'default']));
  add('codeExecute.image', get(layer, ['codeExecute', 'image']));
  const languages = get(layer, ['images', 'languages']);
  if (typeof languages === 'object' && languages !== null)
    for (const [lang, image] of Object.entries(languages)) add(`images.languages.${lang}`, image);
  return named.filter((n) => !imageMatches(n.image, localOnly));
}

/**
 * @param layer the project file's raw content
 * @param trusted the settings in force before it (defaults and the user's own file)
 * @param after the settings with it applied on top of them
 * @returns the settings it changed, each with its value and the one it replaced (`limits.memory 256 MiB (was 512 MiB)`)
 * @throws SandboxError INVALID_CONFIG naming the field and where it belongs
 */
export function checkProjectFile(file: string, layer: unknown, trusted: Parsed, after: Parsed): string[] {
  for (const { path, why } of USER_ONLY) {
    if (get(layer, path) !== undefined) throw refuse(file, path.join('.'), `decides ${why}`);
  }
  if (get(layer, ['plugin', 'confirmStart']) === false)
    throw refuse(file, 'plugin.confirmStart', 'would start containers without asking the user');
  const localOnly = get(layer, ['images', 'localOnly']);
  if (Array.isArray(localOnly)) {
    const dropped = trusted.images.localOnly.filter((p) => !localOnly.includes(p));
    if (dropped.length)
      throw refuse(file, 'images.localOnly', `drops ${dropped.join(', ')} (those images would then be pulled from a registry)`);
  }
  const changed: string[] = [];
  for (const { path, order } of SAFER_FIRST) {
    if (get(layer, path) === undefined) continue;
    const was = get(trusted, path);
    const now = get(after, path);
    const field = path.join('.');
    if (order.indexOf(now) > order.indexOf(was))
      throw refuse(
        file,
        field,
        `is ${shown(now, '')}, wider than the ${shown(was, '')} of your own settings or the defaults (a project may only choose ${order
          .slice(0, order.indexOf(was) + 1)
          .map((v) => shown(v, ''))
          .join(' or ')})`,
      );
    if (now !== was) changed.push(`${field} ${shown(now, '')} (was ${shown(was, '')})`);
  }
  for (const { path, unit, stricter } of CEILINGS) {
    if (get(layer, path) === undefined) continue;
    const was = get(trusted, path) as number;
    const now = get(after, path) as number;
    const field = path.join('.');
    if (field === 'sweepIntervalMinutes' && now === 0 && was !== 0)
      throw refuse(file, field, 'is 0, which turns off the sweep for orphaned containers that your own settings keep on');
    if (stricter === 'higher' ? now < was : now > was && !(field === 'sweepIntervalMinutes' && was === 0))
      throw refuse(
        file,
        field,
        `is ${shown(now, unit)}, ${stricter === 'higher' ? 'below' : 'above'} the ${shown(was, unit)} of your own settings or the defaults (a project may only ${stricter === 'higher' ? 'raise' : 'lower'} it)`,
      );
    if (now !== was) changed.push(`${field} ${shown(now, unit)} (was ${shown(was, unit)})`);
  }
  const pulled = registryImages(layer, trusted.images.localOnly);
  if (pulled.length)
    throw refuse(
      file,
      pulled[0]!.field,
      `names ${pulled.map((p) => p.image).join(', ')}, which would be pulled from a registry (only images built on this machine, images.localOnly, may be named by a project)`,
    );
  const prePull = get(layer, ['images', 'prePull']);
  if (prePull !== undefined && prePull !== false && !(Array.isArray(prePull) && prePull.length === 0))
    if (JSON.stringify(prePull) !== JSON.stringify(trusted.images.prePull))
      throw refuse(file, 'images.prePull', `is ${JSON.stringify(prePull)}, which would start pulls (a project may only turn it off)`);
  const capAdd = get(layer, ['capAdd']);
  if (Array.isArray(capAdd)) {
    const added = capAdd.filter((c) => !trusted.capAdd.includes(c as never));
    if (added.length) throw refuse(file, 'capAdd', `adds ${added.join(', ')} (a project may only drop capabilities)`);
  }
  return changed;
}

/**
 * A project's `images.allow` narrows and never widens: it is kept apart from the trusted
 * list, and an image must match both (policy.ts checkImageAllowed). Returns the layer
 * without it, and the project's list.
 */
export function splitProjectAllowlist(layer: unknown): { layer: unknown; projectAllow?: string[] } {
  const images = get(layer, ['images']);
  if (typeof images !== 'object' || images === null || !('allow' in images)) return { layer };
  const { allow, ...rest } = images as Record<string, unknown>;
  return { layer: { ...(layer as Record<string, unknown>), images: rest }, projectAllow: allow as string[] };
}

/** The settings the project's own file changed, for every question that starts a container: ` [set by <file>: ...]`, or ''. */
export function projectChangedText(config: { projectChanged?: { file: string; settings: string[] } | undefined }): string {
  const c = config.projectChanged;
  return c ? ` [set by ${c.file}: ${c.settings.join(', ')}]` : '';
}
