/**
 * Claim mode of the Kubernetes adapter (agent-sandbox SandboxClaims) against the stand-in API
 * server with its agent-sandbox part (test/support/kube-standin-claims.ts): discovery, a claim
 * per sandbox from the template `kube templates` prints, exec and files in the pod it binds,
 * stop, the sweep, a claim that is never Ready, and the expiry done by the "controller" with
 * no client left. Observed on the stand-in's records and through the docker CLI.
 */
import { LABEL, KubernetesEngine, sweepContainers, type ContainerSpec } from '../../../src/index.js';
import { kubeTemplates } from '../../../src/cli/kube.js';
import type { SandboxTemplate } from '../../../src/engine/kubernetes/claim-spec.js';
import type { Config } from '../../../src/config/config-schema.js';
import { docker, engineSuite, MINIMAL_IMAGE, waitFor, withManager } from '../../support/engine.js';
import { KubeStandin } from '../../support/kube-standin.js';
import { StandinClaims } from '../../support/kube-standin-claims.js';
import { testConfig } from '../../support/temp-dirs.js';
import { containerSpec } from '../../../src/sandbox/start-plan.js';
import { containerUser } from '../../../src/sandbox/container-user.js';

let standin: KubeStandin;
let claims: StandinClaims;
let engine: KubernetesEngine;

engineSuite('kubernetes-claims', {
  afterAll: async () => {
    claims?.stop();
    await standin?.stop();
  },
});

const overrides = { engine: { kind: 'kubernetes' as const }, readOnlyRoot: false };

/** The templates `kube templates` prints for this configuration, applied to the stand-in as `kubectl apply` would. */
function applyTemplates(config: Config): SandboxTemplate[] {
  const printed = JSON.stringify(kubeTemplates(config, { replicas: 1, images: [MINIMAL_IMAGE] }), null, 2);
  const list = JSON.parse(printed) as { kind: string; items: Array<{ kind: string }> };
  expect(list.kind).toBe('List');
  const templates = list.items.filter((i): i is SandboxTemplate => i.kind === 'SandboxTemplate');
  for (const t of templates) claims.templates.set(t.metadata.name!, structuredClone(t));
  return templates;
}

beforeAll(async () => {
  standin = await new KubeStandin().start();
  claims = new StandinClaims(standin);
  engine = new KubernetesEngine({ kubeconfig: standin.kubeconfig });
  applyTemplates(testConfig(overrides));
});

async function containerLeft(name: string): Promise<string> {
  return (await docker(['ps', '-aq', '--filter', `name=^${name}$`])).stdout.trim();
}

/** The spec a start with this configuration gives the engine (its disk limit as the engine is asked for it). */
function claimSpec(name: string, over: Partial<ContainerSpec> = {}): ContainerSpec {
  const config = testConfig(overrides);
  const { spec } = containerSpec(
    config,
    `claims-${standin.runId}`,
    {},
    { image: MINIMAL_IMAGE, name, user: containerUser(config, []), binds: [], project: undefined },
  );
  return { ...spec, diskBytes: config.limits.disk, labels: { ...spec.labels, [LABEL.session]: `claims-${standin.runId}` }, ...over };
}

test('discovery: auto finds the claim resource; pod forces pods; claim on a cluster without it is refused with why', async () => {
  expect(await engine.mode()).toBe('claim');
  expect(standin.requests).toContain('GET /apis/extensions.agents.x-k8s.io/v1alpha1');
  expect(await new KubernetesEngine({ kubeconfig: standin.kubeconfig, mode: 'pod' }).mode()).toBe('pod');
  const without = await new KubeStandin().start();
  try {
    expect(await new KubernetesEngine({ kubeconfig: without.kubeconfig }).mode()).toBe('pod');
    await expect(new KubernetesEngine({ kubeconfig: without.kubeconfig, mode: 'claim' }).mode()).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
      message: expect.stringMatching(/does not serve sandboxclaims\.extensions\.agents\.x-k8s\.io\/v1alpha1/),
    });
  } finally {
    await without.stop();
  }
});

test('a sandbox is a claim: its pod runs the commands and files; stop deletes the claim and the pod', async () => {
  await withManager(
    async (manager) => {
      const sandbox = await manager.start({ image: MINIMAL_IMAGE });
      const stored = claims.claims.get(sandbox.id)!;
      expect(stored.claim.spec).toMatchObject({
        sandboxTemplateRef: { name: 'genaicode-docker-genaicode-docker-sandbox-minimal-latest' },
        lifecycle: { shutdownPolicy: 'Delete', shutdownTime: sandbox.info.expiresAt.toISOString().replace(/\.\d{3}Z$/, 'Z') },
      });
      expect(stored.claim.metadata.labels).toMatchObject({ [LABEL.managed]: 'true' });
      // No pod of our own: the one the controller made, named apart from the claim.
      const pod = claims.podOf(sandbox.id)!;
      expect(pod).not.toBe(sandbox.id);
      expect(standin.requests.filter((r) => r === 'POST /api/v1/namespaces/sandboxes/pods')).toEqual([]);
      const container = standin.containerOf(pod)!;
      expect(await sandbox.exec('echo out; echo err >&2; exit 3')).toMatchObject({ exitCode: 3, stdout: 'out\n', stderr: 'err\n' });
      expect(standin.execs.some((e) => e.pod === pod)).toBe(true);
      // stdin ends with a close frame and the exit status still comes back.
      const out: Buffer[] = [];
      const s = await engine.exec(sandbox.id, { cmd: ['/bin/sh', '-c', 'wc -c; exit 5'], stdin: Buffer.alloc(100_001, 'z') }, (_s, c) =>
        out.push(Buffer.from(c)),
      );
      expect((await s.done).exitCode).toBe(5);
      expect(Buffer.concat(out).toString()).toBe('100001\n');
      // A file round trip.
      const content = 'claimed line\n'.repeat(3000);
      await sandbox.writeFile('dir/notes.txt', content);
      expect((await sandbox.readFileBytes('dir/notes.txt')).toString('utf8')).toBe(content);
      // The template's empty network policy closes it: network none.
      expect((await sandbox.exec('ls /sys/class/net')).stdout).toBe('lo\n');
      await sandbox.stop();
      expect(claims.claims.has(sandbox.id)).toBe(false);
      expect(standin.pods.has(pod)).toBe(false);
      expect(await containerLeft(container)).toBe('');
    },
    { engine, overrides },
  );
});

test('the sweep lists claims by label and deletes those of a dead owner', async () => {
  const id = await engine.createContainer(
    claimSpec(`dead-${standin.runId}`, {
      labels: {
        [LABEL.managed]: 'true',
        [LABEL.owner]: 'elsewhere-host:4194301',
        [LABEL.session]: `claims-${standin.runId}`,
        [LABEL.expiresAt]: new Date(Date.now() - 120_000).toISOString(),
      },
    }),
  );
  await engine.startContainer(id);
  const pod = claims.podOf(id)!;
  const container = standin.containerOf(pod)!;
  const listed = await engine.listContainers({ [LABEL.session]: `claims-${standin.runId}` });
  expect(listed.map((c) => c.id)).toEqual([id]);
  expect(listed[0]).toMatchObject({ image: MINIMAL_IMAGE, state: 'running', labels: { [LABEL.owner]: 'elsewhere-host:4194301' } });
  const report = await sweepContainers(engine, {});
  expect(report.removed.map((r) => r.id)).toContain(id);
  expect(claims.claims.has(id)).toBe(false);
  expect(await containerLeft(container)).toBe('');
});

test('a claim that never becomes Ready fails the start in bounded time, naming the claim and its condition, and leaves nothing', async () => {
  claims.hold = 'the stand-in has no room for it';
  const before = claims.claims.size;
  const started = Date.now();
  try {
    await withManager(
      async (manager) => {
        const e = await manager.start({ image: MINIMAL_IMAGE }).then(
          () => undefined,
          (err: unknown) => err,
        );
        expect(e).toMatchObject({
          code: 'CONTAINER_START_FAILED',
          message: expect.stringMatching(
            /SandboxClaim \S+ was not Ready after 5 s.*Ready=False SandboxNotReady: the stand-in has no room for it/,
          ),
        });
      },
      { engine: new KubernetesEngine({ kubeconfig: standin.kubeconfig, startTimeoutSeconds: 5 }), overrides },
    );
  } finally {
    claims.hold = undefined;
  }
  expect(Date.now() - started).toBeLessThan(60_000);
  expect(claims.claims.size).toBe(before);
});

test('the expiry is the cluster\u2019s: the claim is deleted with its pod at its shutdownTime, no client left', async () => {
  const short = new KubernetesEngine({ kubeconfig: standin.kubeconfig });
  const id = await short.createContainer(claimSpec(`expiry-${standin.runId}`, { expiresAt: new Date(Date.now() + 4000) }));
  await short.startContainer(id);
  const container = standin.containerOf(claims.podOf(id)!)!;
  expect(claims.claims.get(id)!.claim.spec.lifecycle?.shutdownPolicy).toBe('Delete');
  // Nothing of ours calls the stand-in from here: what deletes the claim is its shutdownTime.
  const requests = standin.requests.length;
  await waitFor('the claim to be deleted at its shutdownTime', async () => (claims.claims.has(id) ? undefined : true), 30_000);
  expect(standin.requests.length).toBe(requests);
  expect(await containerLeft(container)).toBe('');
  expect(await engine.inspectContainer(id)).toBeUndefined();
});

test('a missing or altered template is refused before any claim is made, with what to do', async () => {
  const name = 'genaicode-docker-genaicode-docker-sandbox-minimal-latest';
  const good = claims.templates.get(name)!;
  const before = claims.claims.size;
  const variants: Array<[string, (t: SandboxTemplate) => void, RegExp]> = [
    ['missing', () => claims.templates.delete(name), /No SandboxTemplate genaicode-docker-genaicode-docker-sandbox-minimal-latest/],
    ['privileged', (t) => (t.spec.podTemplate.spec.containers[0]!.securityContext!.privileged = true), /its securityContext is/],
    ['capabilities kept', (t) => (t.spec.podTemplate.spec.containers[0]!.securityContext!.capabilities = {}), /its securityContext is/],
    ['token mounted', (t) => (t.spec.podTemplate.spec.automountServiceAccountToken = true), /its automountServiceAccountToken is true/],
    ['host network', (t) => (t.spec.podTemplate.spec.hostNetwork = true), /its hostNetwork is true/],
    ['another image', (t) => (t.spec.podTemplate.spec.containers[0]!.image = 'evil/image:latest'), /its image is "evil\/image:latest"/],
    ['memory limit raised', (t) => (t.spec.podTemplate.spec.containers[0]!.resources!.limits!.memory = '99999999999'), /its resources is/],
    ['network open', (t) => delete t.spec.networkPolicy, /lets its pods use the network/],
    ['network unmanaged', (t) => (t.spec.networkPolicyManagement = 'Unmanaged'), /lets its pods use the network/],
    ['egress allowed', (t) => (t.spec.networkPolicy = { egress: [{}] }), /lets its pods use the network/],
  ];
  try {
    for (const [what, alter, message] of variants) {
      const t = structuredClone(good);
      alter(t);
      if (what !== 'missing') claims.templates.set(name, t);
      const e = await engine.createContainer(claimSpec(`bad-${standin.runId}`)).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect({ what, e }).toMatchObject({ what, e: { code: 'INVALID_CONFIG', message: expect.stringMatching(message) } });
      expect((e as Error).message).toMatch(/genaicode-docker kube templates/);
      expect(claims.claims.size).toBe(before);
    }
  } finally {
    claims.templates.set(name, good);
  }
});
