/**
 * A stand-in for a Kubernetes API server, at the wire level: the JSON over HTTP that
 * client-node speaks for pods, namespaces' network policies and the version, and the
 * exec WebSocket with its channel framing (v5.channel.k8s.io, v4 when that is all the client
 * offers). Its pods are real containers on the local engine, run with the docker CLI from
 * the pod's fields, so what the adapter asks for is what a command inside meets: the
 * securityContext, the memory-backed volumes, the deny-all policy (as `--network none`), the
 * service-account token a pod gets unless it opts out, and activeDeadlineSeconds (the
 * stand-in kills the pod then, as a kubelet does). Not a cluster: one node, no scheduler,
 * no admission beyond what the API server's validation refuses (names, label values).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { WebSocketServer, type WebSocket } from 'ws';
import type { V1NetworkPolicy, V1Pod } from '@kubernetes/client-node';
import { docker } from './engine.js';
import { tempDir } from './temp-dirs.js';

const TOKEN = `standin-${randomBytes(8).toString('hex')}`;
const LABEL_VALUE = /^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;
const POD_NAME = /^[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?$/;

export interface ExecRecord {
  pod: string;
  command: string[];
  protocol: string;
  /** Stdin was ended by a close frame (channel 255), the connection staying open. */
  stdinClosedByFrame: boolean;
  exitCode: number | null;
}

export interface StoredPod {
  pod: V1Pod;
  container: string;
  deadline?: NodeJS.Timeout;
  ready: Promise<void>;
  /** The one removal of its container, shared by every DELETE that comes while it runs. */
  removing?: Promise<void>;
}

function status(res: ServerResponse, code: number, reason: string, message: string): void {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code }));
}

function json(res: ServerResponse, code: number, body: unknown): void {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function body(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
}

function selects(policy: V1NetworkPolicy, labels: Record<string, string>): boolean {
  const want = policy.spec?.podSelector?.matchLabels ?? {};
  return Object.entries(want).every(([k, v]) => labels[k] === v);
}

export class KubeStandin {
  readonly runId = randomBytes(4).toString('hex');
  readonly pods = new Map<string, StoredPod>();
  readonly policies = new Map<string, V1NetworkPolicy>();
  readonly execs: ExecRecord[] = [];
  /** Every request's method and path, in order. */
  readonly requests: string[] = [];
  private server: Server | undefined;
  private readonly wss = new WebSocketServer({
    noServer: true,
    handleProtocols: (offered) =>
      offered.has('v5.channel.k8s.io') ? 'v5.channel.k8s.io' : offered.has('v4.channel.k8s.io') ? 'v4.channel.k8s.io' : false,
  });
  private readonly children = new Set<ChildProcess>();
  /** When set, an exec's stdin loses every byte past this many: a copy cut on the way. */
  dropStdinAfter: number | undefined;
  /** When set, the byte of an exec's stdin at this offset arrives altered. */
  flipStdinByte: number | undefined;
  /** What its authorizer refuses, as `<verb> <resource>[/<subresource>]` (everything else is allowed). */
  readonly denied = new Set<string>();
  url = '';
  kubeconfig = '';
  /** Resources served beside the core ones (the agent-sandbox part: kube-standin-claims.ts), asked before the 404. */
  readonly extensions: Array<(req: IncomingMessage, res: ServerResponse, url: URL) => Promise<boolean>> = [];

  /** A certificate of its own for 127.0.0.1, made now (the kube config trusts exactly it). */
  private certificate(dir: string): { cert: Buffer; key: Buffer } {
    const key = join(dir, 'key.pem');
    const cert = join(dir, 'cert.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=kube-standin',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        key,
        '-out',
        cert,
      ],
      { stdio: 'ignore' },
    );
    return { cert: readFileSync(cert), key: readFileSync(key) };
  }

  async start(namespace = 'sandboxes'): Promise<this> {
    const dir = tempDir('kube-standin-');
    const tls = this.certificate(dir);
    this.server = createServer(tls, (req, res) => {
      this.route(req, res).catch((e: unknown) => status(res, 500, 'InternalError', String(e)));
    });
    this.server.on('upgrade', (req, socket, head) => this.upgrade(req, socket as import('node:net').Socket, head));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const address = this.server.address();
    if (!address || typeof address === 'string') throw new Error('the stand-in has no port');
    this.url = `https://127.0.0.1:${address.port}`;
    this.kubeconfig = join(dir, 'config');
    writeFileSync(
      this.kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'standin', cluster: { server: this.url, 'certificate-authority-data': tls.cert.toString('base64') } }],
        users: [{ name: 'standin', user: { token: TOKEN } }],
        contexts: [{ name: 'standin', context: { cluster: 'standin', user: 'standin', namespace } }],
        'current-context': 'standin',
      }),
    );
    return this;
  }

  /** The local container that is pod `name`. */
  containerOf(name: string): string | undefined {
    return this.pods.get(name)?.container;
  }

  async stop(): Promise<void> {
    for (const c of this.children) c.kill('SIGKILL');
    for (const p of this.pods.values()) clearTimeout(p.deadline);
    for (const client of this.wss.clients) client.terminate();
    this.wss.close();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server?.closeAllConnections();
    const left = await docker(['ps', '-aq', '--filter', `label=kube-standin=${this.runId}`]);
    const ids = left.stdout.split('\n').filter(Boolean);
    if (ids.length) await docker(['rm', '-f', ...ids]);
  }

  private authorized(req: IncomingMessage): boolean {
    return req.headers.authorization === `Bearer ${TOKEN}`;
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://standin');
    this.requests.push(`${req.method} ${url.pathname}`);
    if (!this.authorized(req)) return status(res, 401, 'Unauthorized', 'Unauthorized');
    if (url.pathname === '/version')
      return json(res, 200, {
        major: '1',
        minor: '31',
        gitVersion: 'v1.31.0-standin',
        gitCommit: 'standin',
        gitTreeState: 'clean',
        buildDate: '2026-01-01T00:00:00Z',
        goVersion: 'go1.22',
        compiler: 'gc',
        platform: 'linux/amd64',
      });
    if (url.pathname === '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews' && req.method === 'POST') {
      const review = (await body(req)) as { spec?: { resourceAttributes?: { verb?: string; resource?: string; subresource?: string } } };
      const a = review.spec?.resourceAttributes ?? {};
      const key = `${a.verb} ${a.resource}${a.subresource ? `/${a.subresource}` : ''}`;
      const allowed = !this.denied.has(key);
      return json(res, 201, { ...review, status: { allowed, ...(allowed ? {} : { reason: `the stand-in denies ${key}` }) } });
    }
    let m = /^\/apis\/networking\.k8s\.io\/v1\/namespaces\/([^/]+)\/networkpolicies$/.exec(url.pathname);
    if (m && req.method === 'POST') {
      const policy = (await body(req)) as V1NetworkPolicy;
      const name = policy.metadata?.name ?? '';
      if (this.policies.has(name)) return status(res, 409, 'AlreadyExists', `networkpolicies "${name}" already exists`);
      this.policies.set(name, policy);
      return json(res, 201, policy);
    }
    m = /^\/api\/v1\/namespaces\/([^/]+)\/pods$/.exec(url.pathname);
    if (m && req.method === 'POST') return this.createPod((await body(req)) as V1Pod, res);
    if (m && req.method === 'GET') {
      const wanted = (url.searchParams.get('labelSelector') ?? '').split(',').filter(Boolean);
      const items = [...this.pods.values()]
        .map((p) => p.pod)
        .filter((p) =>
          wanted.every((w) => {
            const [k, v] = w.split('=');
            return p.metadata?.labels?.[k!] === v;
          }),
        );
      return json(res, 200, { kind: 'PodList', apiVersion: 'v1', metadata: {}, items });
    }
    m = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)$/.exec(url.pathname);
    if (m) {
      const stored = this.pods.get(decodeURIComponent(m[2]!));
      if (!stored) return status(res, 404, 'NotFound', `pods "${m[2]}" not found`);
      if (req.method === 'GET') return json(res, 200, stored.pod);
      if (req.method === 'DELETE') {
        stored.pod.metadata!.deletionTimestamp ??= new Date();
        json(res, 200, stored.pod);
        return this.deletePod(stored.pod.metadata!.name!);
      }
    }
    for (const extension of this.extensions) if (await extension(req, res, url)) return;
    return status(res, 404, 'NotFound', `the stand-in has no ${req.method} ${url.pathname}`);
  }

  /**
   * Deletes a pod, resolving once its container is gone: a client that deletes and reads at
   * once still sees it Terminating. A second deletion while the first runs joins it, as an API
   * server's does: a second `docker rm -f` would fail at once ("removal already in progress")
   * and the pod would be reported gone while its container is still being removed.
   */
  async deletePod(name: string): Promise<void> {
    const stored = this.pods.get(name);
    if (!stored) return;
    stored.pod.metadata!.deletionTimestamp ??= new Date();
    stored.removing ??= this.removePod(stored);
    await stored.removing;
  }

  private async removePod(stored: StoredPod): Promise<void> {
    clearTimeout(stored.deadline);
    await stored.ready.catch(() => undefined);
    const r = await docker(['rm', '-f', stored.container]);
    if (r.code !== 0 && !/No such container/i.test(r.stderr)) {
      // The pod stays listed (a test sees it), and the next DELETE tries again.
      stored.removing = undefined;
      return;
    }
    this.pods.delete(stored.pod.metadata!.name!);
  }

  private dockerArgs(pod: V1Pod, container: string): string[] {
    const spec = pod.spec!;
    const c = spec.containers[0]!;
    const sc = c.securityContext ?? {};
    if (sc.privileged) throw new Error('privileged pods are not run here');
    const labels = pod.metadata?.labels ?? {};
    const args = ['run', '-d', '--name', container, '--label', `kube-standin=${this.runId}`];
    const uid = sc.runAsUser ?? spec.securityContext?.runAsUser;
    const gid = sc.runAsGroup ?? spec.securityContext?.runAsGroup;
    if (uid !== undefined) args.push('--user', gid !== undefined ? `${uid}:${gid}` : String(uid));
    for (const cap of c.securityContext?.capabilities?.drop ?? []) args.push('--cap-drop', cap);
    for (const cap of c.securityContext?.capabilities?.add ?? []) args.push('--cap-add', cap);
    if (sc.allowPrivilegeEscalation === false) args.push('--security-opt', 'no-new-privileges');
    if (sc.readOnlyRootFilesystem) args.push('--read-only');
    for (const mount of c.volumeMounts ?? []) {
      const volume = spec.volumes?.find((v) => v.name === mount.name);
      if (volume?.emptyDir?.medium !== 'Memory') throw new Error(`volume ${mount.name} is not run here`);
      args.push('--tmpfs', `${mount.mountPath}:size=${volume.emptyDir.sizeLimit ?? '64m'},mode=1777`);
    }
    // The API server's default: a token of the namespace's service account in every pod that does not opt out.
    if (spec.automountServiceAccountToken !== false) args.push('--tmpfs', '/var/run/secrets/kubernetes.io/serviceaccount:size=1m');
    if (c.resources?.limits?.memory) args.push('--memory', c.resources.limits.memory);
    const cpu = c.resources?.limits?.cpu;
    if (cpu) args.push('--cpus', cpu.endsWith('m') ? String(Number(cpu.slice(0, -1)) / 1000) : cpu);
    const isolated = [...this.policies.values()].some(
      (p) => selects(p, labels) && p.spec?.policyTypes?.includes('Egress') && !(p.spec.egress ?? []).length,
    );
    args.push('--network', isolated ? 'none' : 'bridge');
    for (const e of c.env ?? []) args.push('-e', `${e.name}=${e.value ?? ''}`);
    if (c.workingDir) args.push('-w', c.workingDir);
    const command = c.command ?? [];
    if (command.length) args.push('--entrypoint', command[0]!);
    args.push(c.image!, ...command.slice(1), ...(c.args ?? []));
    return args;
  }

  private createPod(pod: V1Pod, res: ServerResponse): void {
    const added = this.addPod(pod);
    if ('code' in added) return status(res, added.code, added.reason, added.message);
    json(res, 201, added.pod);
  }

  /** Admits a pod as the API server would and runs it as a kubelet would; a refusal is the status it answers. */
  addPod(pod: V1Pod): StoredPod | { code: number; reason: string; message: string } {
    const name = pod.metadata?.name ?? '';
    if (!POD_NAME.test(name)) return { code: 422, reason: 'Invalid', message: `Pod "${name}" is invalid: metadata.name` };
    for (const [k, v] of Object.entries(pod.metadata?.labels ?? {}))
      if (!LABEL_VALUE.test(v))
        return { code: 422, reason: 'Invalid', message: `Pod "${name}" is invalid: metadata.labels: Invalid value: "${v}" (${k})` };
    if (this.pods.has(name)) return { code: 409, reason: 'AlreadyExists', message: `pods "${name}" already exists` };
    const container = `kube-standin-${this.runId}-${name}`.slice(0, 120);
    let args: string[];
    try {
      args = this.dockerArgs(pod, container);
    } catch (e) {
      return { code: 422, reason: 'Invalid', message: String(e) };
    }
    pod.metadata = { ...pod.metadata, namespace: 'sandboxes', uid: randomBytes(8).toString('hex'), creationTimestamp: new Date() };
    pod.status = { phase: 'Pending' };
    const stored: StoredPod = { pod, container, ready: Promise.resolve() };
    stored.ready = this.run(stored, args);
    this.pods.set(name, stored);
    return stored;
  }

  /** Runs the pod's container, then marks it Running and arms its deadline, as a kubelet would. */
  private async run(stored: StoredPod, args: string[]): Promise<void> {
    const r = await docker(args);
    const pod = stored.pod;
    if (r.code !== 0) {
      pod.status = {
        phase: 'Pending',
        containerStatuses: [
          {
            name: 'sandbox',
            image: '',
            imageID: '',
            ready: false,
            restartCount: 0,
            state: { waiting: { reason: 'CreateContainerError', message: r.stderr.trim() } },
          },
        ],
      };
      return;
    }
    const startTime = new Date();
    pod.status = {
      phase: 'Running',
      startTime,
      containerStatuses: [
        { name: 'sandbox', image: '', imageID: '', ready: true, restartCount: 0, state: { running: { startedAt: startTime } } },
      ],
    };
    const deadline = pod.spec?.activeDeadlineSeconds;
    if (deadline !== undefined) {
      stored.deadline = setTimeout(() => {
        void docker(['kill', stored.container]).then(() => {
          pod.status = {
            phase: 'Failed',
            reason: 'DeadlineExceeded',
            message: `Pod was active on the node longer than the specified deadline`,
            startTime,
            containerStatuses: [
              {
                name: 'sandbox',
                image: '',
                imageID: '',
                ready: false,
                restartCount: 0,
                state: { terminated: { exitCode: 137, reason: 'Error' } },
              },
            ],
          };
        });
      }, deadline * 1000);
      stored.deadline.unref();
    }
  }

  private upgrade(req: IncomingMessage, socket: import('node:net').Socket, head: Buffer): void {
    const url = new URL(req.url ?? '/', 'http://standin');
    this.requests.push(`UPGRADE ${url.pathname}`);
    const refuse = (code: number, message: string) => {
      const text = JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', message, code });
      socket.end(`HTTP/1.1 ${code} Refused\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\n\r\n${text}`);
    };
    if (!this.authorized(req)) return refuse(401, 'Unauthorized');
    const m = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/exec$/.exec(url.pathname);
    const stored = m ? this.pods.get(decodeURIComponent(m[2]!)) : undefined;
    if (!stored) return refuse(404, `pods "${m?.[2] ?? ''}" not found`);
    if (stored.pod.status?.phase !== 'Running') return refuse(400, `container sandbox is not running (${stored.pod.status?.phase})`);
    const command = url.searchParams.getAll('command');
    const withStdin = url.searchParams.get('stdin') === 'true';
    this.wss.handleUpgrade(req, socket, head, (ws) => this.exec(ws, stored, command, withStdin));
  }

  private exec(ws: WebSocket, stored: StoredPod, command: string[], withStdin: boolean): void {
    const record: ExecRecord = {
      pod: stored.pod.metadata!.name!,
      command,
      protocol: ws.protocol,
      stdinClosedByFrame: false,
      exitCode: null,
    };
    this.execs.push(record);
    const child = spawn('docker', ['exec', ...(withStdin ? ['-i'] : []), stored.container, ...command], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.children.add(child);
    if (!withStdin) child.stdin.end();
    child.stdin.on('error', () => undefined); // the command may end before reading its input
    child.stdout.on('data', (c: Buffer) => ws.send(Buffer.concat([Buffer.of(1), c])));
    child.stderr.on('data', (c: Buffer) => ws.send(Buffer.concat([Buffer.of(2), c])));
    let forwarded = 0;
    ws.on('message', (data: Buffer) => {
      if (data[0] === 0) {
        const room = this.dropStdinAfter === undefined ? Infinity : Math.max(0, this.dropStdinAfter - forwarded);
        const part = Buffer.from(data.subarray(1, 1 + Math.min(room, data.length - 1)));
        const flip = this.flipStdinByte;
        if (flip !== undefined && flip >= forwarded && flip < forwarded + part.length)
          part[flip - forwarded] = 0xff - (part[flip - forwarded] ?? 0);
        forwarded += part.length;
        if (part.length) child.stdin.write(part);
      } else if (data[0] === 255 && data[1] === 0) {
        record.stdinClosedByFrame = true;
        child.stdin.end();
      }
    });
    // v4 has no close frame: its client can only end stdin by closing the socket, and the status goes with it.
    ws.on('close', () => child.stdin.end());
    child.on('close', (code) => {
      this.children.delete(child);
      record.exitCode = code;
      const s =
        code === 0
          ? { metadata: {}, status: 'Success' }
          : {
              metadata: {},
              status: 'Failure',
              message: `command terminated with non-zero exit code: ${code}`,
              reason: 'NonZeroExitCode',
              details: { causes: [{ reason: 'ExitCode', message: String(code) }] },
            };
      if (ws.readyState === ws.OPEN) ws.send(Buffer.concat([Buffer.of(3), Buffer.from(JSON.stringify(s))]), () => ws.close(1000));
    });
  }
}
