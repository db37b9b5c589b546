import type { CustomObjectsApi } from '@kubernetes/client-node';
import { SandboxError } from '../../errors.js';
import { poll } from '../../retry.js';
import type { ContainerSpec, ContainerState, ContainerSummary } from '../container-engine.js';
import { apiStatus } from './api-errors.js';
import {
  CLAIM_GROUP,
  CLAIM_VERSION,
  CLAIMS,
  SANDBOX_GROUP,
  SANDBOXES,
  TEMPLATES,
  checkTemplate,
  chooseMode,
  claimFor,
  claimProgress,
  podOfSandbox,
  templateNameOf,
  TERMINAL_REASONS,
  type KubernetesMode,
  type SandboxClaim,
  type SandboxObject,
  type SandboxTemplate,
} from './claim-spec.js';
import { labelSelector } from './pod-spec.js';

/** Our labels of a claim: verbatim in its annotations (and as labels where a label can hold them), as on a pod. */
function labelsOf(claim: SandboxClaim): Record<string, string> {
  return { ...(claim.metadata.labels ?? {}), ...(claim.metadata.annotations ?? {}) };
}

/**
 * Sandboxes as agent-sandbox SandboxClaims (docs/scale-out.md): a claim per sandbox, from the
 * SandboxTemplate of its image, deleted by the controller at its shutdownTime. What runs is
 * still a pod, which the adapter then execs into as in pod mode; this holds the claim's side.
 */

/** Whether the API server serves SandboxClaims (the agent-sandbox extensions are installed): API discovery. */
export async function claimsServed(custom: Pick<CustomObjectsApi, 'getAPIResources'>): Promise<boolean> {
  try {
    const list = await custom.getAPIResources({ group: CLAIM_GROUP, version: CLAIM_VERSION });
    return list.resources.some((r) => r.name === CLAIMS);
  } catch (e) {
    if (apiStatus(e) === 404) return false;
    throw e;
  }
}

export interface ClaimContext {
  custom: CustomObjectsApi;
  namespace: string;
  /** Configured template names per image. */
  templates: Record<string, string>;
  fail(e: unknown, context: string): SandboxError;
}

const CLAIM = (c: ClaimContext) => ({ group: CLAIM_GROUP, version: CLAIM_VERSION, namespace: c.namespace, plural: CLAIMS });

export class ClaimSandboxes {
  /** The pod each claim bound, once known. */
  private readonly pods = new Map<string, string>();

  constructor(private readonly c: ClaimContext) {}

  /**
   * Creates the claim, once its template is found and checked against the spec.
   * @throws SandboxError INVALID_CONFIG for a missing or unfit template, INVALID_ARGUMENT for a name taken
   */
  async create(spec: ContainerSpec, name: string, expiresAt: Date): Promise<string> {
    const template = templateNameOf(spec.image, this.c.templates);
    let found: SandboxTemplate;
    try {
      found = (await this.c.custom.getNamespacedCustomObject({ ...CLAIM(this.c), plural: TEMPLATES, name: template })) as SandboxTemplate;
    } catch (e) {
      if (apiStatus(e) === 404)
        throw new SandboxError(
          'INVALID_CONFIG',
          `No SandboxTemplate ${template} in namespace ${this.c.namespace} for the image ${spec.image}: print the templates with \`genaicode-docker kube templates\` and apply them, name another in engine.kubernetes.templates, or set engine.kubernetes.mode to pod.`,
          { cause: e, data: { field: 'engine.kubernetes.templates' } },
        );
      throw this.c.fail(e, `Read SandboxTemplate ${template}`);
    }
    checkTemplate(found, spec);
    try {
      const made = (await this.c.custom.createNamespacedCustomObject({
        ...CLAIM(this.c),
        body: claimFor(spec, name, template, expiresAt),
      })) as SandboxClaim;
      return made.metadata.name ?? name;
    } catch (e) {
      if (apiStatus(e) === 409)
        throw new SandboxError('INVALID_ARGUMENT', `A SandboxClaim named ${name} already exists in namespace ${this.c.namespace}.`, {
          cause: e,
          data: { name },
        });
      throw this.c.fail(e, 'Create SandboxClaim');
    }
  }

  async read(name: string): Promise<SandboxClaim | undefined> {
    try {
      return (await this.c.custom.getNamespacedCustomObject({ ...CLAIM(this.c), name })) as SandboxClaim;
    } catch (e) {
      if (apiStatus(e) === 404) return undefined;
      throw this.c.fail(e, `Read SandboxClaim ${name}`);
    }
  }

  /**
   * Waits until the claim is Ready and names its Sandbox; returns the Sandbox's pod.
   * @throws SandboxError CONTAINER_START_FAILED naming the claim and its last condition
   */
  async waitReady(name: string, timeoutMs: number): Promise<string> {
    let last = 'no condition yet';
    const outcome = await poll<{ sandbox: string } | { end: string }>(
      async () => {
        const claim = await this.read(name);
        if (!claim) return { end: 'was deleted before it was Ready' };
        const p = claimProgress(claim);
        if (p.last)
          last = `${p.last.type}=${p.last.status}${p.last.reason ? ` ${p.last.reason}` : ''}${p.last.message ? `: ${p.last.message}` : ''}`;
        if (p.ready && p.sandbox) return { sandbox: p.sandbox };
        return p.last?.status === 'False' && TERMINAL_REASONS.has(p.last.reason ?? '') ? { end: 'will not become Ready' } : undefined;
      },
      { timeoutMs, intervalMs: (n) => Math.min(1000, 100 * 2 ** n) },
    );
    if (!outcome || 'end' in outcome) {
      const why = outcome?.end ?? `was not Ready after ${timeoutMs / 1000} s (engine.kubernetes.startTimeoutSeconds)`;
      throw new SandboxError('CONTAINER_START_FAILED', `SandboxClaim ${name} ${why}; its last condition: ${last}.`);
    }
    const pod = await this.podOfSandbox(outcome.sandbox);
    this.pods.set(name, pod);
    return pod;
  }

  private async podOfSandbox(sandbox: string): Promise<string> {
    try {
      const s = (await this.c.custom.getNamespacedCustomObject({
        group: SANDBOX_GROUP,
        version: CLAIM_VERSION,
        namespace: this.c.namespace,
        plural: SANDBOXES,
        name: sandbox,
      })) as SandboxObject;
      return podOfSandbox(s);
    } catch (e) {
      throw this.c.fail(e, `Read Sandbox ${sandbox}`);
    }
  }

  /**
   * The pod of a claim, for exec and files.
   * @throws SandboxError CONTAINER_NOT_FOUND when the claim is gone or binds none
   */
  async podOf(name: string): Promise<string> {
    const known = this.pods.get(name);
    if (known) return known;
    const claim = await this.read(name);
    const sandbox = claim ? claimProgress(claim).sandbox : undefined;
    if (!sandbox)
      throw new SandboxError('CONTAINER_NOT_FOUND', `SandboxClaim ${name} is gone or has no sandbox.`, { data: { containerId: name } });
    const pod = await this.podOfSandbox(sandbox);
    this.pods.set(name, pod);
    return pod;
  }

  /** The claim as the port's ContainerState: running while Ready. */
  async inspect(name: string): Promise<ContainerState | undefined> {
    const claim = await this.read(name);
    if (!claim) return undefined;
    const p = claimProgress(claim);
    const deleting = claim.metadata.deletionTimestamp !== undefined;
    return {
      id: name,
      name,
      running: p.ready && !deleting,
      status: deleting ? 'Terminating' : (p.last?.reason ?? (p.ready ? 'Ready' : 'Pending')),
      oomKilled: false,
      exitCode: null,
      labels: labelsOf(claim),
    };
  }

  async list(labels: Record<string, string>): Promise<ContainerSummary[]> {
    const { selector, rest } = labelSelector(labels);
    let claims: SandboxClaim[];
    try {
      claims = (
        (await this.c.custom.listNamespacedCustomObject({ ...CLAIM(this.c), ...(selector ? { labelSelector: selector } : {}) })) as {
          items: SandboxClaim[];
        }
      ).items;
    } catch (e) {
      throw this.c.fail(e, 'List SandboxClaims');
    }
    return claims
      .filter((c) => rest.every(([k, v]) => c.metadata.annotations?.[k] === v))
      .map((c) => {
        const p = claimProgress(c);
        const l = labelsOf(c);
        return {
          id: c.metadata.name ?? '',
          names: [c.metadata.name ?? ''],
          image: l['genaicode-docker.image'] ?? '',
          labels: l,
          state: p.ready ? 'running' : (p.last?.reason ?? 'pending').toLowerCase(),
          createdAt: c.metadata.creationTimestamp ? new Date(c.metadata.creationTimestamp) : new Date(0),
        };
      });
  }

  /** Deletes the claim (the controller deletes its Sandbox and pod with it). @returns whether it existed */
  async delete(name: string): Promise<boolean> {
    try {
      await this.c.custom.deleteNamespacedCustomObject({ ...CLAIM(this.c), name, propagationPolicy: 'Foreground' });
      return true;
    } catch (e) {
      if (apiStatus(e) === 404) return false;
      throw this.c.fail(e, `Delete SandboxClaim ${name}`);
    } finally {
      this.pods.delete(name);
    }
  }

  /** Deletes the claim and waits until it is gone. @throws SandboxError ENGINE_ERROR when it stays */
  async remove(name: string): Promise<boolean> {
    if (!(await this.delete(name))) return false;
    const gone = await poll(async () => ((await this.read(name)) ? undefined : true), {
      timeoutMs: 60_000,
      intervalMs: (n) => Math.min(1000, 50 * 2 ** n),
    });
    if (!gone) throw new SandboxError('ENGINE_ERROR', `SandboxClaim ${name} was still there 60 s after its deletion.`);
    return true;
  }
}

/**
 * The claims' side for `mode` (in `auto`, whether API discovery finds the claim resource and
 * the namespace has templates of ours, or templates are named in the settings), or undefined
 * where sandboxes are pods of our own.
 * @throws SandboxError INVALID_CONFIG when `claim` is set and the cluster does not serve claims
 */
export async function claimSandboxesFor(mode: KubernetesMode, c: ClaimContext): Promise<ClaimSandboxes | undefined> {
  if (mode === 'pod') return undefined;
  let served: boolean;
  try {
    served = await claimsServed(c.custom);
  } catch (e) {
    throw c.fail(e, `Discovery of ${CLAIM_GROUP}/${CLAIM_VERSION}`);
  }
  if (mode === 'claim' && !served)
    throw new SandboxError(
      'INVALID_CONFIG',
      `engine.kubernetes.mode is claim, but the API server does not serve ${CLAIMS}.${CLAIM_GROUP}/${CLAIM_VERSION}: install the agent-sandbox extensions (docs/scale-out.md) or set the mode to auto or pod.`,
      { data: { field: 'engine.kubernetes.mode' } },
    );
  // auto: claims only where the user has made them usable (templates of ours, or named ones):
  // a cluster that merely has the extensions keeps getting pods, as before they were installed.
  if (mode === 'auto' && served && Object.keys(c.templates).length === 0 && !(await templatesOfOurs(c))) return undefined;
  return chooseMode(mode, served) === 'claim' ? new ClaimSandboxes(c) : undefined;
}

/** Whether the namespace holds a SandboxTemplate `kube templates` printed (its label); one the credentials may not list counts as none. */
async function templatesOfOurs(c: ClaimContext): Promise<boolean> {
  try {
    const list = (await c.custom.listNamespacedCustomObject({
      ...CLAIM(c),
      plural: TEMPLATES,
      labelSelector: 'genaicode-docker.managed=true',
      limit: 1,
    })) as { items?: unknown[] };
    return (list.items?.length ?? 0) > 0;
  } catch (e) {
    if (apiStatus(e) === 403 || apiStatus(e) === 404) return false;
    throw c.fail(e, `List SandboxTemplates in ${c.namespace}`);
  }
}
