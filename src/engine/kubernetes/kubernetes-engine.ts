import type {
  AuthorizationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  NetworkingV1Api,
  VersionApi,
  V1Pod,
} from '@kubernetes/client-node';
import type WebSocket from 'ws';
import { SandboxError } from '../../errors.js';
import { poll } from '../../retry.js';
import type {
  ContainerEngine,
  ContainerSpec,
  ContainerState,
  ContainerSummary,
  EngineInfo,
  ExecSession,
  ExecSpec,
  ImageInfo,
  PathStat,
  StreamId,
} from '../container-engine.js';
import { CONTAINER_NAME, DENY_ALL_POLICY, HOST_MOUNT_REFUSAL, denyAllPolicy, labelSelector, labelsOfPod, podFor } from './pod-spec.js';
import { podExec } from './pod-exec.js';
import { STUCK, stateOf } from './pod-state.js';
import { extractOverExec, statPathOverExec } from './pod-files.js';
import { removePodsSync, syncTargetOf, type SyncTarget } from './remove-pods-sync.js';
import { apiStatus, kubernetesFailure } from './api-errors.js';
import { CLAIM_ACCESS_NEEDS, reviewAccess, type AccessAnswer } from './access-review.js';
import { claimSandboxesFor, type ClaimSandboxes } from './claim-sandboxes.js';
import type { KubernetesMode } from './claim-spec.js';

export interface KubernetesSettings {
  /** Kube config file. @default $KUBECONFIG, then ~/.kube/config, then the in-cluster account */
  kubeconfig?: string;
  /** Context of the kube config. @default its current context */
  context?: string;
  /** Namespace of the pods. @default the context's namespace, else "default" */
  namespace?: string;
  /** How long a pod may take to run (its image pulled, scheduled). @default 120 */
  startTimeoutSeconds?: number;
  /** Pods of our own, or agent-sandbox SandboxClaims; `auto` asks API discovery once. @default auto */
  mode?: KubernetesMode;
  /** The SandboxTemplate of an image, where it is not the name derived from the image. */
  templates?: Record<string, string>;
}

/**
 * The Kubernetes adapter: each container a pod of one container, in one namespace, or (claim
 * mode) an agent-sandbox SandboxClaim whose pod we exec into. The cluster pulls images and
 * schedules; we create, exec, copy and delete. What outlives us is ended by the cluster
 * itself: every pod carries activeDeadlineSeconds up to its expiry, every claim a
 * shutdownTime with the policy Delete.
 */
/** The API clients, made at the first call (client-node takes a second to load: nobody on Docker pays it). */
interface Clients {
  kc: KubeConfig;
  core: CoreV1Api;
  net: NetworkingV1Api;
  versions: VersionApi;
  authz: AuthorizationV1Api;
  custom: CustomObjectsApi;
  namespace: string;
  server: string;
}

export class KubernetesEngine implements ContainerEngine {
  readonly hostMountRefusal = HOST_MOUNT_REFUSAL;
  private readonly settings: KubernetesSettings;
  private readonly startTimeoutMs: number;
  private loading: Promise<Clients> | undefined;
  private loaded: Clients | undefined;
  private policyReady: Promise<void> | undefined;
  /** What the exit-time remover needs, resolved at each create (credentials may be renewed). */
  private syncTarget: SyncTarget | undefined;
  /** The mode in force, decided once; the claims' side where it is `claim`. */
  private moding: Promise<ClaimSandboxes | undefined> | undefined;

  constructor(settings: KubernetesSettings = {}) {
    this.settings = settings;
    this.startTimeoutMs = (settings.startTimeoutSeconds ?? 120) * 1000;
  }

  /** @throws SandboxError INVALID_CONFIG when the kube config cannot be read or names no cluster */
  private clients(): Promise<Clients> {
    this.loading ??= (async () => {
      const k8s = await import('@kubernetes/client-node');
      const kc = new k8s.KubeConfig();
      const s = this.settings;
      try {
        if (s.kubeconfig) kc.loadFromFile(s.kubeconfig);
        else kc.loadFromDefault();
        if (s.context) kc.setCurrentContext(s.context);
      } catch (e) {
        throw new SandboxError(
          'INVALID_CONFIG',
          `The kube config ${s.kubeconfig ?? '($KUBECONFIG or ~/.kube/config)'} could not be used: ${e instanceof Error ? e.message : String(e)}.`,
          { cause: e, data: { field: 'engine.kubernetes' } },
        );
      }
      const server = kc.getCurrentCluster()?.server;
      if (!server)
        throw new SandboxError(
          'INVALID_CONFIG',
          'The kube config names no cluster: set KUBECONFIG or engine.kubernetes.kubeconfig and .context.',
          {
            data: { field: 'engine.kubernetes' },
          },
        );
      const namespace = s.namespace ?? kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default';
      this.loaded = {
        kc,
        core: kc.makeApiClient(k8s.CoreV1Api),
        net: kc.makeApiClient(k8s.NetworkingV1Api),
        versions: kc.makeApiClient(k8s.VersionApi),
        authz: kc.makeApiClient(k8s.AuthorizationV1Api),
        custom: kc.makeApiClient(k8s.CustomObjectsApi),
        namespace,
        server,
      };
      return this.loaded;
    })().catch((e: unknown) => {
      this.loading = undefined;
      throw e;
    });
    return this.loading;
  }

  /** The API server's address, as the kube config gives it. */
  get server(): string {
    return this.loaded?.server ?? "(the kube config's cluster)";
  }

  /** The namespace the pods go to, as the settings and the kube config name it. */
  async namespace(): Promise<string> {
    return (await this.clients()).namespace;
  }

  /** Whether these credentials may do what the adapter does in its namespace (`doctor`): the API server's own answer. */
  async access(): Promise<AccessAnswer[]> {
    const { authz, namespace } = await this.clients();
    try {
      return await reviewAccess(authz, namespace, (await this.claims()) ? CLAIM_ACCESS_NEEDS : undefined);
    } catch (e) {
      throw this.fail(e, 'SelfSubjectAccessReview');
    }
  }

  private fail(e: unknown, context: string): SandboxError {
    return kubernetesFailure(e, context, this.server);
  }

  /** The claims' side when sandboxes are SandboxClaims (decided once: docs/scale-out.md), else undefined: pods of our own. */
  private claims(): Promise<ClaimSandboxes | undefined> {
    this.moding ??= this.clients()
      .then(({ custom, namespace }) =>
        claimSandboxesFor(this.settings.mode ?? 'auto', {
          custom,
          namespace,
          templates: this.settings.templates ?? {},
          fail: (e, c) => this.fail(e, c),
        }),
      )
      .catch((e: unknown) => {
        this.moding = undefined;
        throw e;
      });
    return this.moding;
  }

  /** `pod` or `claim`: what a sandbox is on this cluster. */
  async mode(): Promise<'pod' | 'claim'> {
    return (await this.claims()) ? 'claim' : 'pod';
  }

  /** The pod of a sandbox: itself in pod mode, the one its claim bound in claim mode. */
  private async podName(id: string): Promise<string> {
    const claims = await this.claims();
    return claims ? claims.podOf(id) : id;
  }

  async info(): Promise<EngineInfo> {
    try {
      const v = await (await this.clients()).versions.getCode();
      return {
        version: v.gitVersion,
        apiVersion: `${v.major}.${v.minor}`,
        os: v.platform,
        kind: 'kubernetes',
        cgroupVersion: 'unknown',
        endpoint: this.server,
      };
    } catch (e) {
      throw this.fail(e, 'Version');
    }
  }

  /** The kubelet of whichever node runs the pod pulls the image: nothing is local here. */
  hasImage(): Promise<boolean> {
    return Promise.resolve(true);
  }

  inspectImage(): Promise<ImageInfo | undefined> {
    return Promise.resolve(undefined);
  }

  pullImage(): Promise<void> {
    return Promise.resolve();
  }

  /** The namespace's deny-all policy, made once per engine before the first pod that needs it. */
  private ensureDenyAll(): Promise<void> {
    this.policyReady ??= (async () => {
      const { net, namespace } = await this.clients();
      try {
        await net.createNamespacedNetworkPolicy({ namespace, body: denyAllPolicy() });
      } catch (e) {
        if (apiStatus(e) !== 409) throw this.fail(e, `Create NetworkPolicy ${DENY_ALL_POLICY}`);
      }
    })().catch((e: unknown) => {
      this.policyReady = undefined;
      throw e;
    });
    return this.policyReady;
  }

  /**
   * Creates the pod, which the cluster then starts on its own (`startContainer` waits for it).
   * @throws SandboxError POLICY_VIOLATION for host mounts, INVALID_ARGUMENT without an expiry
   */
  async createContainer(spec: ContainerSpec): Promise<string> {
    if (!spec.expiresAt)
      throw new SandboxError('INVALID_ARGUMENT', 'A pod needs an expiry: the cluster ends it then, whatever happens to this process.');
    const name = spec.name ?? `genaicode-docker-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
    const pod = podFor(spec, name, (spec.expiresAt.getTime() - Date.now()) / 1000);
    const claims = await this.claims();
    await this.refreshSyncTarget(claims ? 'claims' : 'pods');
    // The template's own deny-all policy closes a claim's pod (checked before the claim is made).
    if (claims) return claims.create(spec, name, spec.expiresAt);
    if (spec.network === 'none') await this.ensureDenyAll();
    const { core, namespace } = await this.clients();
    try {
      const made = await core.createNamespacedPod({ namespace, body: pod });
      return made.metadata?.name ?? name;
    } catch (e) {
      if (apiStatus(e) === 409)
        throw new SandboxError('INVALID_ARGUMENT', `A pod named ${name} already exists in namespace ${namespace}.`, {
          cause: e,
          data: { name },
        });
      throw this.fail(e, 'Create pod');
    }
  }

  /** Waits until the pod (in claim mode: the claim is Ready, then its pod) runs. @throws SandboxError CONTAINER_START_FAILED with the reason */
  async startContainer(id: string): Promise<void> {
    const claims = await this.claims();
    const started = Date.now();
    const pod = claims ? await claims.waitReady(id, this.startTimeoutMs) : id;
    await this.waitRunning(pod, this.startTimeoutMs - (Date.now() - started), claims ? `SandboxClaim ${id}: its pod ${pod}` : `Pod ${id}`);
  }

  private async waitRunning(id: string, timeoutMs: number, what: string): Promise<void> {
    const outcome = await poll(
      async () => {
        const pod = await this.readPod(id);
        if (!pod) return 'the pod was deleted before it ran';
        const state = pod.status?.containerStatuses?.find((c) => c.name === CONTAINER_NAME)?.state;
        if (pod.status?.phase === 'Running' && state?.running) return 'running';
        const waiting = state?.waiting;
        if (waiting?.reason && STUCK.has(waiting.reason)) return `${waiting.reason}: ${waiting.message ?? ''}`.trim();
        if (pod.status?.phase === 'Failed' || pod.status?.phase === 'Succeeded')
          return `it ended (${pod.status.reason ?? pod.status.phase}${state?.terminated?.reason ? `, ${state.terminated.reason}` : ''})`;
        const unschedulable = pod.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.reason === 'Unschedulable');
        return unschedulable && unschedulable.message?.includes('Insufficient') ? `Unschedulable: ${unschedulable.message}` : undefined;
      },
      { timeoutMs: Math.max(0, timeoutMs), intervalMs: (n) => Math.min(1000, 100 * 2 ** n) },
    );
    if (outcome === 'running') return;
    throw new SandboxError(
      'CONTAINER_START_FAILED',
      `${what} did not start: ${outcome ?? `not running after ${this.startTimeoutMs / 1000} s (engine.kubernetes.startTimeoutSeconds)`}.`,
    );
  }

  private async readPod(id: string): Promise<V1Pod | undefined> {
    const { core, namespace } = await this.clients();
    try {
      return await core.readNamespacedPod({ name: id, namespace });
    } catch (e) {
      if (apiStatus(e) === 404) return undefined;
      throw this.fail(e, `Read pod ${id}`);
    }
  }

  /** A pod cannot be stopped and kept: stopping deletes it, within `graceSeconds`. */
  async stopContainer(id: string, graceSeconds: number): Promise<boolean> {
    const claims = await this.claims();
    return claims ? claims.delete(id) : this.deletePod(id, graceSeconds);
  }

  private async deletePod(id: string, graceSeconds: number): Promise<boolean> {
    const { core, namespace } = await this.clients();
    try {
      await core.deleteNamespacedPod({ name: id, namespace, gracePeriodSeconds: graceSeconds });
      return true;
    } catch (e) {
      if (apiStatus(e) === 404) return false;
      throw this.fail(e, `Delete pod ${id}`);
    }
  }

  async removeContainer(id: string, force: boolean): Promise<boolean> {
    const claims = await this.claims();
    if (claims) return claims.remove(id);
    const existed = await this.deletePod(id, force ? 0 : 2);
    if (!existed) return false;
    const gone = await poll(async () => ((await this.readPod(id)) ? undefined : true), {
      timeoutMs: 60_000,
      intervalMs: (n) => Math.min(1000, 50 * 2 ** n),
    });
    if (!gone) throw new SandboxError('ENGINE_ERROR', `Pod ${id} was still there 60 s after its deletion.`);
    return true;
  }

  /** Bytes written in the pod's writable layer, measured by `du` in it. */
  async diskUsage(id: string): Promise<number | undefined> {
    if (!(await this.readPod(await this.podName(id).catch(() => id)))) return undefined;
    const out: Buffer[] = [];
    const s = await this.exec(id, { cmd: ['/bin/sh', '-c', 'du -skx / 2>/dev/null | cut -f1'] }, (stream, c) => {
      if (stream === 'stdout') out.push(Buffer.from(c));
    });
    await s.done;
    const kib = Number(Buffer.concat(out).toString('utf8').trim());
    return Number.isFinite(kib) ? kib * 1024 : undefined;
  }

  async inspectContainer(idOrName: string): Promise<ContainerState | undefined> {
    const claims = await this.claims();
    if (claims) return claims.inspect(idOrName);
    const pod = await this.readPod(idOrName);
    return pod ? stateOf(pod) : undefined;
  }

  async listContainers(labels: Record<string, string>): Promise<ContainerSummary[]> {
    const claims = await this.claims();
    if (claims) return claims.list(labels);
    const { selector, rest } = labelSelector(labels);
    let pods: V1Pod[];
    const { core, namespace } = await this.clients();
    try {
      pods = (await core.listNamespacedPod({ namespace, ...(selector ? { labelSelector: selector } : {}) })).items;
    } catch (e) {
      throw this.fail(e, 'List pods');
    }
    return pods
      .filter((p) => rest.every(([k, v]) => p.metadata?.annotations?.[k] === v))
      .map((p) => ({
        id: p.metadata?.name ?? '',
        names: [p.metadata?.name ?? ''],
        image: p.spec?.containers[0]?.image ?? '',
        labels: labelsOfPod(p),
        state: stateOf(p).running ? 'running' : (p.status?.phase ?? 'Pending').toLowerCase(),
        createdAt: p.metadata?.creationTimestamp ? new Date(p.metadata.creationTimestamp) : new Date(0),
      }));
  }

  /** Where a pod's exec is, and the credentials to reach it. */
  private async execTarget(id: string): Promise<{ url: string; options: WebSocket.ClientOptions; container: string }> {
    const { kc, server, namespace } = await this.clients();
    const options: WebSocket.ClientOptions = {};
    await kc.applyToHTTPSOptions(options);
    const base = server.replace(/^http/, 'ws').replace(/\/+$/, '');
    return {
      url: `${base}/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(await this.podName(id))}/exec`,
      options,
      container: CONTAINER_NAME,
    };
  }

  async exec(containerId: string, spec: ExecSpec, onOutput: (stream: StreamId, chunk: Buffer) => void): Promise<ExecSession> {
    return podExec(await this.execTarget(containerId), spec, onOutput);
  }

  statPath(id: string, path: string): Promise<PathStat | undefined> {
    return statPathOverExec((spec, onOutput) => this.exec(id, spec, onOutput), path);
  }

  extractArchive(id: string, path: string, archive: Buffer | AsyncIterable<Buffer>): Promise<void> {
    return extractOverExec((spec, onOutput) => this.exec(id, spec, onOutput), path, archive);
  }

  private async refreshSyncTarget(collection: SyncTarget['collection']): Promise<void> {
    const { kc, server, namespace } = await this.clients();
    this.syncTarget = await syncTargetOf(kc, server, namespace, collection);
  }

  removeContainersSync(ids: string[], timeoutMs: number): string[] {
    return removePodsSync(this.syncTarget, ids, timeoutMs);
  }

  /** A pod has no project overlay (no host folders on a cluster): nothing outlives it. */
  listOverlayVolumes = (): Promise<Array<{ name: string; labels: Record<string, string> }>> => Promise.resolve([]);
  removeVolume = (): Promise<boolean> => Promise.resolve(false);
}
