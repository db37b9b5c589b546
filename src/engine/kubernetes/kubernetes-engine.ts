import type { AuthorizationV1Api, CoreV1Api, KubeConfig, NetworkingV1Api, VersionApi, V1Pod } from '@kubernetes/client-node';
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
import { extractOverExec, statPathOverExec } from './pod-files.js';
import { removePodsSync, type SyncTarget } from './remove-pods-sync.js';
import { apiStatus, kubernetesFailure } from './api-errors.js';
import { reviewAccess, type AccessAnswer } from './access-review.js';

export interface KubernetesSettings {
  /** Kube config file. @default $KUBECONFIG, then ~/.kube/config, then the in-cluster account */
  kubeconfig?: string;
  /** Context of the kube config. @default its current context */
  context?: string;
  /** Namespace of the pods. @default the context's namespace, else "default" */
  namespace?: string;
  /** How long a pod may take to run (its image pulled, scheduled). @default 120 */
  startTimeoutSeconds?: number;
}

/** Why a pod that has not started never will: the kubelet's reasons that need a person. */
const STUCK = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'ErrImageNeverPull',
  'CreateContainerConfigError',
  'CreateContainerError',
  'RunContainerError',
]);

/** The pod as the port's ContainerState. */
function stateOf(pod: V1Pod): ContainerState {
  const status = pod.status?.containerStatuses?.find((c) => c.name === CONTAINER_NAME);
  const terminated = status?.state?.terminated;
  const name = pod.metadata?.name ?? '';
  const phase = pod.status?.phase ?? 'Pending';
  return {
    id: name,
    name,
    running: phase === 'Running' && status?.state?.running !== undefined && pod.metadata?.deletionTimestamp === undefined,
    status: pod.metadata?.deletionTimestamp ? 'Terminating' : (pod.status?.reason ?? phase),
    oomKilled: terminated?.reason === 'OOMKilled',
    exitCode: terminated?.exitCode ?? null,
    labels: labelsOfPod(pod),
    ...(pod.spec?.containers[0]?.workingDir ? { workdir: pod.spec.containers[0].workingDir } : {}),
  };
}

/**
 * The Kubernetes adapter: each container a pod of one container, in one namespace. The
 * cluster pulls images and schedules; we create, exec, copy and delete. What outlives us is
 * ended by the cluster itself: every pod carries activeDeadlineSeconds up to its expiry.
 */
/** The API clients, made at the first call (client-node takes a second to load: nobody on Docker pays it). */
interface Clients {
  kc: KubeConfig;
  core: CoreV1Api;
  net: NetworkingV1Api;
  versions: VersionApi;
  authz: AuthorizationV1Api;
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
      return await reviewAccess(authz, namespace);
    } catch (e) {
      throw this.fail(e, 'SelfSubjectAccessReview');
    }
  }

  private fail(e: unknown, context: string): SandboxError {
    return kubernetesFailure(e, context, this.server);
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
    if (spec.network === 'none') await this.ensureDenyAll();
    await this.refreshSyncTarget();
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

  /** Waits until the pod runs. @throws SandboxError CONTAINER_START_FAILED with the kubelet's reason */
  async startContainer(id: string): Promise<void> {
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
      { timeoutMs: this.startTimeoutMs, intervalMs: (n) => Math.min(1000, 100 * 2 ** n) },
    );
    if (outcome === 'running') return;
    throw new SandboxError(
      'CONTAINER_START_FAILED',
      `Pod ${id} did not start: ${outcome ?? `not running after ${this.startTimeoutMs / 1000} s (engine.kubernetes.startTimeoutSeconds)`}.`,
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
    return this.deletePod(id, graceSeconds);
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
    if (!(await this.readPod(id))) return undefined;
    const out: Buffer[] = [];
    const s = await this.exec(id, { cmd: ['/bin/sh', '-c', 'du -skx / 2>/dev/null | cut -f1'] }, (stream, c) => {
      if (stream === 'stdout') out.push(Buffer.from(c));
    });
    await s.done;
    const kib = Number(Buffer.concat(out).toString('utf8').trim());
    return Number.isFinite(kib) ? kib * 1024 : undefined;
  }

  async inspectContainer(idOrName: string): Promise<ContainerState | undefined> {
    const pod = await this.readPod(idOrName);
    return pod ? stateOf(pod) : undefined;
  }

  async listContainers(labels: Record<string, string>): Promise<ContainerSummary[]> {
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
      url: `${base}/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(id)}/exec`,
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

  private async refreshSyncTarget(): Promise<void> {
    const { kc, server, namespace } = await this.clients();
    const o: WebSocket.ClientOptions = {};
    await kc.applyToHTTPSOptions(o);
    const tls: Record<string, string | boolean> = {};
    for (const k of ['ca', 'cert', 'key', 'passphrase', 'servername'] as const) {
      const v = (o as Record<string, unknown>)[k];
      if (typeof v === 'string' || Buffer.isBuffer(v)) tls[k] = v.toString();
    }
    if (typeof o.rejectUnauthorized === 'boolean') tls.rejectUnauthorized = o.rejectUnauthorized;
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(o.headers ?? {})) if (typeof v === 'string') headers[k] = v;
    this.syncTarget = { server, namespace, tls, headers };
  }

  removeContainersSync(ids: string[], timeoutMs: number): string[] {
    return removePodsSync(this.syncTarget, ids, timeoutMs);
  }

  /** A pod has no project overlay (no host folders on a cluster): nothing outlives it. */
  listOverlayVolumes(): Promise<Array<{ name: string; labels: Record<string, string> }>> {
    return Promise.resolve([]);
  }
  removeVolume(): Promise<boolean> {
    return Promise.resolve(false);
  }
}
