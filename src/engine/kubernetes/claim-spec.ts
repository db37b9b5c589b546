import { createHash } from 'node:crypto';
import type { V1Pod, V1PodSpec } from '@kubernetes/client-node';
import { SandboxError } from '../../errors.js';
import type { ContainerSpec } from '../container-engine.js';
import { CONTAINER_NAME, NETWORK_LABEL, podFor, podMetadataLabels } from './pod-spec.js';

/**
 * The agent-sandbox resources (kubernetes-sigs/agent-sandbox, v0.5): a sandbox is a
 * SandboxClaim naming a SandboxTemplate, which a SandboxWarmPool may keep pods of ready. Pure:
 * the bodies we send and how we read what comes back. Field names as the CRDs declare them in
 * extensions/api/v1alpha1/sandboxclaim_types.go, sandboxtemplate_types.go,
 * sandboxwarmpool_types.go and api/v1alpha1/sandbox_types.go of that repository.
 */

export const CLAIM_GROUP = 'extensions.agents.x-k8s.io';
export const SANDBOX_GROUP = 'agents.x-k8s.io';
/** v1alpha1: served by every 0.5 release (later ones also serve v1beta1, whose claim names a warm pool instead). */
export const CLAIM_VERSION = 'v1alpha1';
export const CLAIMS = 'sandboxclaims';
export const TEMPLATES = 'sandboxtemplates';
export const SANDBOXES = 'sandboxes';
/** Where the controller names the pod a Sandbox adopted from a warm pool (else the pod is named as the Sandbox). */
export const POD_NAME_ANNOTATION = 'agents.x-k8s.io/pod-name';

/** How long a template's keep-alive sleeps: a warm pod waits for a claim of unknown length; the claim's shutdownTime ends it. */
const TEMPLATE_KEEP_ALIVE_SECONDS = 365 * 24 * 3600;

export type KubernetesMode = 'auto' | 'pod' | 'claim';

interface Meta {
  name?: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  creationTimestamp?: string | Date;
  deletionTimestamp?: string | Date;
}

export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

export interface SandboxClaim {
  apiVersion: string;
  kind: 'SandboxClaim';
  metadata: Meta;
  spec: {
    sandboxTemplateRef: { name: string };
    lifecycle?: { shutdownTime?: string; shutdownPolicy?: 'Delete' | 'DeleteForeground' | 'Retain' };
    env?: Array<{ name: string; value: string }>;
  };
  status?: { conditions?: Condition[]; sandbox?: { name?: string } };
}

export interface SandboxTemplate {
  apiVersion: string;
  kind: 'SandboxTemplate';
  metadata: Meta;
  spec: {
    podTemplate: { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec: V1PodSpec };
    networkPolicy?: { ingress?: unknown[]; egress?: unknown[] };
    networkPolicyManagement?: 'Managed' | 'Unmanaged';
    envVarsInjectionPolicy?: 'Allowed' | 'Overrides' | 'Disallowed';
  };
}

export interface SandboxWarmPool {
  apiVersion: string;
  kind: 'SandboxWarmPool';
  metadata: Meta;
  spec: { replicas: number; sandboxTemplateRef: { name: string } };
}

/** The Sandbox a claim binds: only what names its pod is read. */
export interface SandboxObject {
  metadata: Meta;
}

/** The mode in force: the setting, or in `auto` whether the API server serves the claim resource. */
export function chooseMode(setting: KubernetesMode, claimsServed: boolean): 'pod' | 'claim' {
  if (setting !== 'auto') return setting;
  return claimsServed ? 'claim' : 'pod';
}

/**
 * The SandboxTemplate of an image: the configured name, else one derived from the image (a
 * DNS-1123 name of at most 63 characters; a long one keeps a hash of the whole reference, so
 * two images never share a name).
 */
export function templateNameOf(image: string, configured: Record<string, string> = {}): string {
  const named = configured[image];
  if (named) return named;
  const base = image
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  // Our golden images already carry the prefix that says whose the template is.
  const slug = base.startsWith('genaicode-docker-') ? base : `genaicode-docker-${base}`;
  if (slug.length <= 63) return slug;
  const hash = createHash('sha256').update(image).digest('hex').slice(0, 8);
  return `${slug.slice(0, 54).replace(/-+$/, '')}-${hash}`;
}

/** The hardened pod of a golden image, without what belongs to one sandbox (its name, deadline, labels of a session). */
function templatePod(spec: ContainerSpec): V1Pod {
  const pod = podFor(
    { ...spec, cmd: [String(TEMPLATE_KEEP_ALIVE_SECONDS)], labels: {}, env: spec.env },
    'template',
    TEMPLATE_KEEP_ALIVE_SECONDS,
  );
  // A warm pod waits for a claim: the claim's shutdownTime is its deadline, not the pod's age.
  delete pod.spec!.activeDeadlineSeconds;
  return pod;
}

/**
 * The SandboxTemplate for `spec`'s image: the pod spec the pod path generates (the same
 * securityContext, no service-account token, resources), and for network `none` an empty
 * network policy, which the controller makes a deny-all one (an absent one would be its
 * default, which lets the pod reach the internet).
 */
export function templateFor(spec: ContainerSpec, name: string, namespace?: string): SandboxTemplate {
  const pod = templatePod(spec);
  return {
    apiVersion: `${CLAIM_GROUP}/${CLAIM_VERSION}`,
    kind: 'SandboxTemplate',
    metadata: {
      name,
      ...(namespace ? { namespace } : {}),
      labels: { 'genaicode-docker.managed': 'true' },
      annotations: { 'genaicode-docker.image': spec.image },
    },
    spec: {
      podTemplate: { metadata: { labels: pod.metadata?.labels ?? {} }, spec: pod.spec! },
      networkPolicyManagement: 'Managed',
      ...(spec.network === 'none' ? { networkPolicy: {} } : {}),
      // A start's own environment goes in its claim (and that claim is then started cold).
      envVarsInjectionPolicy: 'Allowed',
    },
  };
}

export function warmPoolFor(template: string, replicas: number, namespace?: string): SandboxWarmPool {
  return {
    apiVersion: `${CLAIM_GROUP}/${CLAIM_VERSION}`,
    kind: 'SandboxWarmPool',
    metadata: { name: template, ...(namespace ? { namespace } : {}), labels: { 'genaicode-docker.managed': 'true' } },
    spec: { replicas, sandboxTemplateRef: { name: template } },
  };
}

/** The claim of one sandbox: its template, our labels, and the cluster's deletion of it at the expiry. */
export function claimFor(spec: ContainerSpec, name: string, template: string, expiresAt: Date): SandboxClaim {
  const meta = podMetadataLabels({ ...spec.labels, 'genaicode-docker.image': spec.image });
  const env = spec.env.map((e) => {
    const i = e.indexOf('=');
    return i < 0 ? { name: e, value: '' } : { name: e.slice(0, i), value: e.slice(i + 1) };
  });
  return {
    apiVersion: `${CLAIM_GROUP}/${CLAIM_VERSION}`,
    kind: 'SandboxClaim',
    metadata: { name, labels: meta.labels, annotations: meta.annotations },
    spec: {
      sandboxTemplateRef: { name: template },
      lifecycle: { shutdownTime: expiresAt.toISOString().replace(/\.\d{3}Z$/, 'Z'), shutdownPolicy: 'Delete' },
      ...(env.length ? { env } : {}),
    },
  };
}

/**
 * Ready=False reasons the claim controller does not recover from by itself (its
 * computeReadyCondition, extensions/controllers/sandboxclaim_controller.go): a start fails on
 * them at once instead of waiting out its time. The others (SandboxNotReady, ReconcilerError,
 * TemplateNotFound...) are retried by the controller, and waited for.
 */
export const TERMINAL_REASONS: ReadonlySet<string> = new Set([
  'InvalidMetadata',
  'EnvVarsInjectionRejected',
  'VolumeClaimTemplatesError',
  'ClaimExpired',
  'SandboxExpired',
]);

/** The claim's Ready condition and the Sandbox it bound, as its status says them. */
export function claimProgress(claim: SandboxClaim): { ready: boolean; sandbox?: string; last?: Condition } {
  const conditions = claim.status?.conditions ?? [];
  const ready = conditions.find((c) => c.type === 'Ready');
  const sandbox = claim.status?.sandbox?.name;
  return {
    ready: ready?.status === 'True',
    ...(sandbox ? { sandbox } : {}),
    ...(conditions.length ? { last: ready ?? conditions.at(-1) } : {}),
  };
}

/** The pod a Sandbox runs: the one it adopted from a warm pool, else its own name. */
export function podOfSandbox(sandbox: SandboxObject): string {
  return sandbox.metadata.annotations?.[POD_NAME_ANNOTATION] || (sandbox.metadata.name ?? '');
}

/** What a template must hold for a sandbox, compared field by field: the pod path's hardening and this start's limits. */
function hardening(spec: V1PodSpec | undefined): Record<string, unknown> {
  const c = spec?.containers.find((x) => x.name === CONTAINER_NAME) ?? spec?.containers[0];
  return {
    containers: spec?.containers.length,
    image: c?.image,
    workingDir: c?.workingDir,
    podSecurityContext: spec?.securityContext,
    securityContext: c?.securityContext,
    resources: c?.resources,
    volumes: spec?.volumes,
    volumeMounts: c?.volumeMounts,
    automountServiceAccountToken: spec?.automountServiceAccountToken,
    enableServiceLinks: spec?.enableServiceLinks,
    hostNetwork: spec?.hostNetwork ?? false,
    hostPID: spec?.hostPID ?? false,
    hostIPC: spec?.hostIPC ?? false,
    shareProcessNamespace: spec?.shareProcessNamespace ?? false,
  };
}

/** Objects equal whatever the order of their keys (the API server may reorder them). */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object')
    return `{${Object.keys(v)
      .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v);
}

/**
 * Refuses a template that does not give `spec` what the pod path would: a template is the
 * user's object, edited or stale, and a claim runs whatever it says. Names the first field
 * that differs.
 * @throws SandboxError INVALID_CONFIG
 */
export function checkTemplate(template: SandboxTemplate, spec: ContainerSpec): void {
  const name = template.metadata.name ?? '';
  const fix = `Print the templates this configuration needs with \`genaicode-docker kube templates\` and apply them (docs/scale-out.md).`;
  const want = hardening(templatePod(spec).spec);
  const have = hardening(template.spec?.podTemplate?.spec);
  for (const key of Object.keys(want)) {
    if (canonical(want[key]) !== canonical(have[key]))
      throw new SandboxError(
        'INVALID_CONFIG',
        `The SandboxTemplate ${name} does not give this sandbox what it needs: its ${key} is ${canonical(have[key]) ?? 'unset'}, not ${canonical(want[key])}. ${fix}`,
        { data: { field: 'engine.kubernetes.templates' } },
      );
  }
  if (spec.network === 'none') {
    const np = template.spec.networkPolicy;
    const closed =
      template.spec.podTemplate.metadata?.labels?.[NETWORK_LABEL] === 'none' &&
      template.spec.networkPolicyManagement !== 'Unmanaged' &&
      np !== undefined &&
      !np.ingress?.length &&
      !np.egress?.length;
    if (!closed)
      throw new SandboxError(
        'INVALID_CONFIG',
        `The SandboxTemplate ${name} lets its pods use the network, and this sandbox's network is 'none': it needs an empty networkPolicy (deny-all) managed by the controller. ${fix}`,
        { data: { field: 'engine.kubernetes.templates' } },
      );
  }
}
