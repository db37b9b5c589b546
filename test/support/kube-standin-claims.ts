/**
 * The agent-sandbox part of the stand-in API server (kube-standin.ts): API discovery for
 * extensions.agents.x-k8s.io/v1alpha1, SandboxTemplates made and read, SandboxClaims made,
 * read, listed by label and deleted, and the Sandboxes they bind read; and the controllers'
 * part: a claim whose template exists gets a Sandbox and a pod made from the template (a real
 * container on the local engine, as any pod of the stand-in), is then Ready, and is deleted
 * with its pod at its shutdownTime when its policy is Delete, whether or not any client is
 * left. The pod is named apart from its Sandbox, with the annotation the controller sets on a
 * Sandbox that adopted a warm pod, so a client that guesses the pod's name fails here.
 * Not the controller: no warm pool is kept, no admission beyond names and label values.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { V1Pod } from '@kubernetes/client-node';
import type { KubeStandin } from './kube-standin.js';
import type { SandboxClaim, SandboxTemplate } from '../../src/engine/kubernetes/claim-spec.js';

const GROUP = '/apis/extensions.agents.x-k8s.io/v1alpha1';
const NAME = /^[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?$/;
const LABEL_VALUE = /^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

interface StoredClaim {
  claim: SandboxClaim;
  pod?: string;
  shutdown?: NodeJS.Timeout;
  deleting?: Promise<void>;
}

function send(res: ServerResponse, code: number, body: unknown): true {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
  return true;
}

function failure(res: ServerResponse, code: number, reason: string, message: string): true {
  return send(res, code, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });
}

async function read(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
}

export class StandinClaims {
  readonly templates = new Map<string, SandboxTemplate>();
  readonly claims = new Map<string, StoredClaim>();
  /** The Sandboxes: name to the pod it runs. */
  readonly sandboxes = new Map<string, string>();
  /** When set, no claim becomes Ready, with this Ready=False condition: the controller cannot make its pod (a quota, a missing node, a refusal). */
  hold: { reason: string; message: string } | undefined;

  constructor(private readonly standin: KubeStandin) {
    standin.extensions.push((req, res, url) => this.route(req, res, url));
  }

  /** The pod a claim bound, if any. */
  podOf(claim: string): string | undefined {
    return this.claims.get(claim)?.pod;
  }

  stop(): void {
    for (const c of this.claims.values()) clearTimeout(c.shutdown);
  }

  private async route(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> {
    const path = url.pathname;
    if (path === GROUP && req.method === 'GET')
      return send(res, 200, {
        kind: 'APIResourceList',
        apiVersion: 'v1',
        groupVersion: 'extensions.agents.x-k8s.io/v1alpha1',
        resources: ['sandboxclaims', 'sandboxtemplates', 'sandboxwarmpools'].map((name) => ({
          name,
          singularName: name.slice(0, -1),
          namespaced: true,
          kind: { sandboxclaims: 'SandboxClaim', sandboxtemplates: 'SandboxTemplate', sandboxwarmpools: 'SandboxWarmPool' }[name],
          verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
        })),
      });
    let m = /^\/apis\/agents\.x-k8s\.io\/v1alpha1\/namespaces\/[^/]+\/sandboxes\/([^/]+)$/.exec(path);
    if (m && req.method === 'GET') {
      const name = decodeURIComponent(m[1]!);
      const pod = this.sandboxes.get(name);
      if (pod === undefined) return failure(res, 404, 'NotFound', `sandboxes.agents.x-k8s.io "${name}" not found`);
      return send(res, 200, {
        apiVersion: 'agents.x-k8s.io/v1alpha1',
        kind: 'Sandbox',
        metadata: { name, annotations: { 'agents.x-k8s.io/pod-name': pod } },
      });
    }
    m = new RegExp(`^${GROUP}/namespaces/[^/]+/(sandboxtemplates|sandboxclaims)(?:/([^/]+))?$`).exec(path);
    if (!m) return false;
    const name = m[2] === undefined ? undefined : decodeURIComponent(m[2]);
    if (m[1] === 'sandboxtemplates') {
      if (req.method === 'POST' && name === undefined) {
        const t = (await read(req)) as SandboxTemplate;
        const n = t.metadata?.name ?? '';
        if (this.templates.has(n)) return failure(res, 409, 'AlreadyExists', `sandboxtemplates "${n}" already exists`);
        this.templates.set(n, t);
        return send(res, 201, t);
      }
      if (req.method === 'GET' && name === undefined) {
        // A list by label equality (`k=v,...`), as the adapter's auto mode asks it.
        const wanted = (url.searchParams.get('labelSelector') ?? '').split(',').filter(Boolean);
        const items = [...this.templates.values()].filter((t) =>
          wanted.every((w) => t.metadata?.labels?.[w.slice(0, w.indexOf('='))] === w.slice(w.indexOf('=') + 1)),
        );
        return send(res, 200, { apiVersion: 'extensions.agents.x-k8s.io/v1alpha1', kind: 'SandboxTemplateList', metadata: {}, items });
      }
      const t = name === undefined ? undefined : this.templates.get(name);
      if (req.method === 'GET' && t) return send(res, 200, t);
      return failure(res, 404, 'NotFound', `sandboxtemplates.extensions.agents.x-k8s.io "${name}" not found`);
    }
    if (name === undefined && req.method === 'POST') return this.create((await read(req)) as SandboxClaim, res);
    if (name === undefined && req.method === 'GET') {
      const wanted = (url.searchParams.get('labelSelector') ?? '').split(',').filter(Boolean);
      const items = [...this.claims.values()]
        .map((c) => c.claim)
        .filter((c) =>
          wanted.every((w) => {
            const [k, v] = w.split('=');
            return c.metadata.labels?.[k!] === v;
          }),
        );
      return send(res, 200, { kind: 'SandboxClaimList', apiVersion: 'extensions.agents.x-k8s.io/v1alpha1', metadata: {}, items });
    }
    const stored = name === undefined ? undefined : this.claims.get(name);
    if (!stored) return failure(res, 404, 'NotFound', `sandboxclaims.extensions.agents.x-k8s.io "${name}" not found`);
    if (req.method === 'GET') return send(res, 200, stored.claim);
    if (req.method === 'DELETE') {
      stored.claim.metadata.deletionTimestamp ??= new Date().toISOString();
      send(res, 200, stored.claim);
      // Foreground: the claim stays (Terminating) until its pod is gone.
      await this.delete(stored);
      return true;
    }
    return false;
  }

  private create(claim: SandboxClaim, res: ServerResponse): true {
    const name = claim.metadata?.name ?? '';
    if (!NAME.test(name)) return failure(res, 422, 'Invalid', `SandboxClaim "${name}" is invalid: metadata.name`);
    for (const [k, v] of Object.entries(claim.metadata.labels ?? {}))
      if (!LABEL_VALUE.test(v)) return failure(res, 422, 'Invalid', `SandboxClaim "${name}" is invalid: metadata.labels: "${v}" (${k})`);
    if (this.claims.has(name)) return failure(res, 409, 'AlreadyExists', `sandboxclaims "${name}" already exists`);
    claim.metadata = { ...claim.metadata, creationTimestamp: new Date().toISOString() };
    const stored: StoredClaim = { claim };
    this.claims.set(name, stored);
    const lifecycle = claim.spec.lifecycle;
    if (lifecycle?.shutdownTime && lifecycle.shutdownPolicy === 'Delete') {
      stored.shutdown = setTimeout(() => void this.delete(stored), Math.max(0, Date.parse(lifecycle.shutdownTime) - Date.now()));
      stored.shutdown.unref();
    }
    this.reconcile(stored);
    return send(res, 201, claim);
  }

  /** The controller's part: a Sandbox and its pod from the template, then Ready once the pod runs. */
  private reconcile(stored: StoredClaim): void {
    const claim = stored.claim;
    const template = this.templates.get(claim.spec.sandboxTemplateRef.name);
    const notReady = (reason: string, message: string) => {
      claim.status = { conditions: [{ type: 'Ready', status: 'False', reason, message }] };
    };
    if (!template) return notReady('TemplateNotFound', `SandboxTemplate ${claim.spec.sandboxTemplateRef.name} not found`);
    if (this.hold) return notReady(this.hold.reason, this.hold.message);
    const name = claim.metadata.name!;
    const podName = `${name}-warm-${randomBytes(3).toString('hex')}`;
    const spec = structuredClone(template.spec.podTemplate.spec);
    const env = claim.spec.env ?? [];
    if (env.length) spec.containers[0]!.env = [...(spec.containers[0]!.env ?? []), ...env];
    const pod: V1Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: podName, labels: { ...template.spec.podTemplate.metadata?.labels } },
      spec,
    };
    // The template's managed empty policy is a deny-all one: the pod gets no network, as --network none.
    if (template.spec.networkPolicy && !template.spec.networkPolicy.egress?.length)
      this.standin.policies.set(`template-${template.metadata.name}`, {
        metadata: { name: `template-${template.metadata.name}` },
        spec: { podSelector: { matchLabels: { 'standin.template': template.metadata.name! } }, policyTypes: ['Ingress', 'Egress'] },
      });
    pod.metadata!.labels!['standin.template'] = template.metadata.name!;
    const added = this.standin.addPod(pod);
    if ('code' in added) return notReady('ReconcilerError', added.message);
    stored.pod = podName;
    this.sandboxes.set(name, podName);
    notReady('SandboxNotReady', 'the pod is starting');
    void added.ready.then(() => {
      if (added.pod.status?.phase === 'Running' && this.claims.get(name) === stored)
        claim.status = { conditions: [{ type: 'Ready', status: 'True', reason: 'SandboxReady', message: '' }], sandbox: { name } };
      else if (this.claims.get(name) === stored) notReady('SandboxNotReady', `pod ${podName}: ${JSON.stringify(added.pod.status)}`);
    });
  }

  /** The claim's deletion: its pod first (the cascade), then the Sandbox and the claim. */
  private delete(stored: StoredClaim): Promise<void> {
    stored.deleting ??= (async () => {
      clearTimeout(stored.shutdown);
      stored.claim.metadata.deletionTimestamp ??= new Date().toISOString();
      if (stored.pod) await this.standin.deletePod(stored.pod);
      const name = stored.claim.metadata.name!;
      this.sandboxes.delete(name);
      this.claims.delete(name);
    })();
    return stored.deleting;
  }
}
