import type { V1NetworkPolicy, V1Pod, V1Volume, V1VolumeMount } from '@kubernetes/client-node';
import { SandboxError } from '../../errors.js';
import type { ContainerSpec } from '../container-engine.js';

/**
 * A ContainerSpec as a Kubernetes Pod: the same hardening, said in the cluster's words. Pure
 * (no API calls), so a unit test reads every field and `podman kube play` can run the result.
 */

/** The one container of every pod we create. */
export const CONTAINER_NAME = 'sandbox';

/**
 * The label that puts a pod under the namespace's deny-all NetworkPolicy. The policy exists
 * before any pod carries the label (the adapter makes sure of it first), so no pod with
 * network `none` ever has a moment of network.
 */
export const NETWORK_LABEL = 'genaicode-docker.network';
export const DENY_ALL_POLICY = 'genaicode-docker-network-none';

/** The sentence a project or host mount gets on a cluster: the host's folders are not the nodes'. */
export const HOST_MOUNT_REFUSAL =
  "A host folder cannot be mounted on the Kubernetes engine: the pod runs on one of the cluster's nodes, where this machine's paths do not exist. " +
  "Start the container without the project (project: 'none'), then copy the files it needs in with writeFile, " +
  'or build an image that contains them (see docs/scale-out.md).';

/** A label value as Kubernetes accepts one: at most 63 characters, alphanumeric at both ends. */
const LABEL_VALUE = /^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;
/** A label key: an optional DNS prefix and `/`, then a name of at most 63 characters. */
const LABEL_KEY = /^(?:[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?\/)?[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
/** A pod name (a DNS-1123 subdomain). */
const POD_NAME = /^[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?$/;

export function isLabelValue(value: string): boolean {
  return LABEL_VALUE.test(value);
}

/**
 * Our labels on a pod: every one verbatim as an annotation (a label value may not hold `:`,
 * which an owner or a time does), and as a label too where its value is one, so that a
 * selector finds them.
 */
export function podMetadataLabels(labels: Record<string, string>): { labels: Record<string, string>; annotations: Record<string, string> } {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(labels)) {
    if (!LABEL_KEY.test(k))
      throw new SandboxError('INVALID_ARGUMENT', `The label ${JSON.stringify(k)} is not a valid Kubernetes label key.`);
    if (isLabelValue(v)) out[k] = v;
  }
  return { labels: out, annotations: { ...labels } };
}

/** What the labels of a pod were, read back from its annotations (and labels). */
export function labelsOfPod(pod: V1Pod): Record<string, string> {
  return { ...(pod.metadata?.labels ?? {}), ...(pod.metadata?.annotations ?? {}) };
}

/** Resource quantities in the cluster's units: bytes as plain integers, CPUs in millicores. */
function cpuQuantity(nanoCpus: number): string {
  return `${Math.max(1, Math.round(nanoCpus / 1e6))}m`;
}

/** `uid:gid` (or `uid`) as numbers; a name cannot be checked against the image here. */
function numericUser(user: string | undefined): { uid: number; gid?: number } | undefined {
  if (user === undefined) return undefined;
  const m = /^(\d+)(?::(\d+))?$/.exec(user);
  if (!m) {
    throw new SandboxError(
      'INVALID_CONFIG',
      `The container user ${JSON.stringify(user)} is not numeric: on Kubernetes the pod's user is set as numbers (runAsUser), so give it as uid:gid.`,
      { data: { field: 'user' } },
    );
  }
  return { uid: Number(m[1]), ...(m[2] !== undefined ? { gid: Number(m[2]) } : {}) };
}

/**
 * The pod for `spec`, ending by the cluster's own hand `deadlineSeconds` after it starts
 * (activeDeadlineSeconds: the kubelet kills it whatever became of us).
 * @throws SandboxError POLICY_VIOLATION for a host mount, INVALID_ARGUMENT for a name a pod cannot have
 */
export function podFor(spec: ContainerSpec, name: string, deadlineSeconds: number): V1Pod {
  if (spec.binds.length > 0 || (spec.overlayVolumes?.length ?? 0) > 0)
    throw new SandboxError('POLICY_VIOLATION', HOST_MOUNT_REFUSAL, { data: { rule: 'projectMount' } });
  if (spec.publishPorts?.length)
    throw new SandboxError(
      'POLICY_VIOLATION',
      "publishPorts cannot be honoured on a cluster: a pod's port is not on this machine's loopback (use kubectl port-forward to the pod).",
      { data: { rule: 'publishPorts' } },
    );
  if (!POD_NAME.test(name))
    throw new SandboxError(
      'INVALID_ARGUMENT',
      `The name ${JSON.stringify(name)} cannot name a pod: use lowercase letters, digits, '-' and '.', starting and ending with a letter or digit.`,
      { data: { name } },
    );
  const user = numericUser(spec.user);
  const meta = podMetadataLabels(spec.labels);
  if (spec.network === 'none') meta.labels[NETWORK_LABEL] = 'none';

  // Memory-backed folders: tmpfs mounts and tmpfs volumes are the same thing here (the
  // archive API they differ for does not exist on a cluster: files go over exec).
  const memoryDirs = [...spec.tmpfs, ...(spec.tmpfsVolumes ?? [])];
  const volumes: V1Volume[] = memoryDirs.map((t, i) => ({
    name: `tmpfs-${i}`,
    emptyDir: { medium: 'Memory', sizeLimit: String(t.sizeBytes) },
  }));
  const volumeMounts: V1VolumeMount[] = memoryDirs.map((t, i) => ({ name: `tmpfs-${i}`, mountPath: t.path }));
  const limits: Record<string, string> = { memory: String(spec.memoryBytes), cpu: cpuQuantity(spec.nanoCpus) };
  // The kubelet evicts a pod whose writable layer and emptyDirs pass this: the disk quota.
  if (spec.diskBytes !== undefined) limits['ephemeral-storage'] = String(spec.diskBytes);

  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels: meta.labels, annotations: meta.annotations },
    spec: {
      activeDeadlineSeconds: Math.max(1, Math.ceil(deadlineSeconds)),
      restartPolicy: 'Never',
      // No credentials of the cluster inside, and nothing about its other services.
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      hostNetwork: false,
      hostPID: false,
      hostIPC: false,
      shareProcessNamespace: false,
      // The keep-alive ignores SIGTERM as process 1: a stop need not wait for it.
      terminationGracePeriodSeconds: 2,
      securityContext: {
        ...(user ? { runAsUser: user.uid, runAsNonRoot: user.uid !== 0 } : {}),
        ...(user?.gid !== undefined ? { runAsGroup: user.gid, fsGroup: user.gid } : {}),
        seccompProfile: { type: 'RuntimeDefault' },
      },
      ...(volumes.length ? { volumes } : {}),
      containers: [
        {
          name: CONTAINER_NAME,
          image: spec.image,
          imagePullPolicy: 'IfNotPresent',
          command: spec.entrypoint,
          args: spec.cmd,
          env: spec.env.map((e) => {
            const i = e.indexOf('=');
            return i < 0 ? { name: e, value: '' } : { name: e.slice(0, i), value: e.slice(i + 1) };
          }),
          workingDir: spec.workdir,
          resources: { limits, requests: { ...limits } },
          securityContext: {
            privileged: false,
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: spec.readOnlyRoot,
            capabilities: { drop: ['ALL'], ...(spec.capAdd.length ? { add: [...spec.capAdd] } : {}) },
            ...(user ? { runAsUser: user.uid, runAsNonRoot: user.uid !== 0 } : {}),
            ...(user?.gid !== undefined ? { runAsGroup: user.gid } : {}),
          },
          ...(volumeMounts.length ? { volumeMounts } : {}),
        },
      ],
    },
  };
}

/** Denies every connection in and out of the pods with NETWORK_LABEL=none: network `none`. */
export function denyAllPolicy(): V1NetworkPolicy {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: DENY_ALL_POLICY, labels: { 'genaicode-docker.managed': 'true' } },
    // No ingress or egress rule: nothing is allowed either way.
    spec: { podSelector: { matchLabels: { [NETWORK_LABEL]: 'none' } }, policyTypes: ['Ingress', 'Egress'] },
  };
}

/** A label selector for equality on every pair that a label can hold; the rest is checked on the annotations. */
export function labelSelector(labels: Record<string, string>): { selector: string; rest: Array<[string, string]> } {
  const exact: string[] = [];
  const rest: Array<[string, string]> = [];
  for (const [k, v] of Object.entries(labels)) {
    if (isLabelValue(v)) exact.push(`${k}=${v}`);
    else rest.push([k, v]);
  }
  return { selector: exact.join(','), rest };
}
