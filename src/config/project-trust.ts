import { SandboxError } from '../errors.js';
import { PROJECT_MOUNTS, type ProjectMount } from '../policy/policy.js';

/**
 * What a project's own `.genaicode-docker.json` may say. GenAIcode reads that file from
 * whatever repository it opens, so it is the repository's word, not the user's: it may tune
 * the sandbox (limits, network, read-only root, timeouts, output sizes, a tighter allowlist)
 * but not decide whom to trust. These settings come only from the user's own config file
 * (`$XDG_CONFIG_HOME/genaicode-docker/config.json` or `$GENAICODE_DOCKER_CONFIG`), the
 * environment or options in code; a project file may only narrow them (its image allowlist
 * is kept apart and applied on top of the trusted one).
 */

/** Settings a project file may not set at all, with where they belong instead. */
const USER_ONLY: Array<{ path: string[]; why: string }> = [
  { path: ['engine'], why: 'which engine receives the commands' },
  { path: ['user'], why: 'who containers run as' },
  { path: ['allowRootWithWritableMounts'], why: 'whether a container may write host files as root' },
  { path: ['mountAllow'], why: 'which host folders may be mounted' },
  { path: ['codeExecute', 'mounts'], why: 'which host folders code sandboxes mount' },
  { path: ['images', 'registry'], why: 'which registry the language images are pulled from' },
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
 * @param layer the project file's raw content
 * @param trusted the images settings in force before it (defaults and the user's own file)
 * @throws SandboxError INVALID_CONFIG naming the field and where it belongs
 */
export function checkProjectFile(
  file: string,
  layer: unknown,
  trusted: { images: { localOnly: readonly string[] }; project: { mount: ProjectMount } },
): void {
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
  const mount = get(layer, ['project', 'mount']);
  if (typeof mount === 'string' && PROJECT_MOUNTS.indexOf(mount as ProjectMount) > PROJECT_MOUNTS.indexOf(trusted.project.mount))
    throw refuse(
      file,
      'project.mount',
      `is ${mount}, above the ${trusted.project.mount} your own settings allow (a project may only lower it)`,
    );
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
