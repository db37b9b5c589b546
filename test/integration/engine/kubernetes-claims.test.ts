/**
 * Claim mode of the Kubernetes adapter (agent-sandbox SandboxClaims) against the stand-in API
 * server with its agent-sandbox part (test/support/kube-standin-claims.ts): discovery, a claim
 * per sandbox from the template `kube templates` prints, exec and files in the pod it binds,
 * stop, the sweep, a claim that is never Ready, and the expiry done by the "controller" with
 * no client left. Observed on the stand-in's records and through the docker CLI.
 */
import { LABEL, KubernetesEngine, sweepContainers, type ContainerSpec } from '../../../src/index.js';
import { kubeTemplates } from '../../../src/cli/kube.js';
import type { SandboxTemplate, SandboxWarmPool } from '../../../src/engine/kubernetes/claim-spec.js';
import { doctor } from '../../../src/cli/doctor.js';
import { CLI, removedSyncElsewhere, requireBuiltPackage } from '../../support/built-package.js';
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Config } from '../../../src/config/config-schema.js';
import { docker, engineSuite, MINIMAL_IMAGE, waitFor, withManager } from '../../support/engine.js';
import { KubeStandin } from '../../support/kube-standin.js';
import { StandinClaims } from '../../support/kube-standin-claims.js';
import { tempDir, testConfig } from '../../support/temp-dirs.js';
import { containerSpec } from '../../../src/sandbox/start-plan.js';
import { containerUser } from '../../../src/sandbox/container-user.js';

const execFileAsync = promisify(execFile);

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

test('discovery: auto finds the claim resource and our templates; pod forces pods; claim on a cluster without it is refused with why', async () => {
  expect(await engine.mode()).toBe('claim');
  expect(standin.requests).toContain('GET /apis/extensions.agents.x-k8s.io/v1alpha1');
  expect(await new KubernetesEngine({ kubeconfig: standin.kubeconfig, mode: 'pod' }).mode()).toBe('pod');
  // The extensions installed, but no template of ours (nor one named in the settings): auto keeps pods.
  const bare = await new KubeStandin().start();
  const bareClaims = new StandinClaims(bare);
  try {
    expect(await new KubernetesEngine({ kubeconfig: bare.kubeconfig }).mode()).toBe('pod');
    expect(bare.requests).toContain('GET /apis/extensions.agents.x-k8s.io/v1alpha1/namespaces/sandboxes/sandboxtemplates');
    expect(await new KubernetesEngine({ kubeconfig: bare.kubeconfig, templates: { [MINIMAL_IMAGE]: 'theirs' } }).mode()).toBe('claim');
    expect(await new KubernetesEngine({ kubeconfig: bare.kubeconfig, mode: 'claim' }).mode()).toBe('claim');
  } finally {
    bareClaims.stop();
    await bare.stop();
  }
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
        sandboxTemplateRef: { name: 'genaicode-docker-sandbox-minimal-latest' },
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
  claims.hold = { reason: 'SandboxNotReady', message: 'the stand-in has no room for it' };
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

test('a claim the controller will not make Ready (a terminal reason) fails the start at once, and leaves nothing', async () => {
  claims.hold = { reason: 'EnvVarsInjectionRejected', message: 'the template does not allow env' };
  const before = claims.claims.size;
  const started = Date.now();
  try {
    const slow = new KubernetesEngine({ kubeconfig: standin.kubeconfig, startTimeoutSeconds: 600 });
    await withManager(
      async (manager) => {
        await expect(manager.start({ image: MINIMAL_IMAGE })).rejects.toMatchObject({
          code: 'CONTAINER_START_FAILED',
          message: expect.stringMatching(
            /SandboxClaim \S+ will not become Ready; its last condition: Ready=False EnvVarsInjectionRejected: the template/,
          ),
        });
      },
      { engine: slow, overrides },
    );
  } finally {
    claims.hold = undefined;
  }
  // Well inside the 600 s it would otherwise wait.
  expect(Date.now() - started).toBeLessThan(60_000);
  expect(claims.claims.size).toBe(before);
});

test('the expiry is the cluster\u2019s: the claim is deleted with its pod at its shutdownTime, no client left', async () => {
  const short = new KubernetesEngine({ kubeconfig: standin.kubeconfig });
  // Far enough ahead that a slow start (a real container behind the stand-in's pod) ends well before it.
  const id = await short.createContainer(claimSpec(`expiry-${standin.runId}`, { expiresAt: new Date(Date.now() + 12_000) }));
  await short.startContainer(id);
  const container = standin.containerOf(claims.podOf(id)!)!;
  expect(claims.claims.get(id)!.claim.spec.lifecycle?.shutdownPolicy).toBe('Delete');
  // Nothing of ours calls the stand-in from here: what deletes the claim is its shutdownTime.
  const requests = standin.requests.length;
  await waitFor('the claim to be deleted at its shutdownTime', async () => (claims.claims.has(id) ? undefined : true), 40_000);
  expect(standin.requests.length).toBe(requests);
  expect(await containerLeft(container)).toBe('');
  expect(await engine.inspectContainer(id)).toBeUndefined();
});

test('a missing or altered template is refused before any claim is made, with what to do', async () => {
  const name = 'genaicode-docker-sandbox-minimal-latest';
  const good = claims.templates.get(name)!;
  const before = claims.claims.size;
  const variants: Array<[string, (t: SandboxTemplate) => void, RegExp]> = [
    ['missing', () => claims.templates.delete(name), /No SandboxTemplate genaicode-docker-sandbox-minimal-latest/],
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

test('kube templates prints a List that parses, each template with the pod path\u2019s hardened pod and a warm pool', async () => {
  requireBuiltPackage(CLI);
  const home = tempDir('kube-templates-');
  mkdirSync(join(home, 'genaicode-docker'));
  writeFileSync(
    join(home, 'genaicode-docker', 'config.json'),
    JSON.stringify({
      engine: { kind: 'kubernetes', kubernetes: { templates: { 'genaicode-docker/python:latest': 'team-python' } } },
    }),
  );
  const { stdout } = await execFileAsync(process.execPath, [CLI, 'kube', 'templates', '--namespace', 'sandboxes', '--replicas', '2'], {
    env: { ...process.env, XDG_CONFIG_HOME: home },
    cwd: home,
  });
  const list = JSON.parse(stdout) as { apiVersion: string; kind: string; items: Array<SandboxTemplate | SandboxWarmPool> };
  expect(list).toMatchObject({ apiVersion: 'v1', kind: 'List' });
  const templates = list.items.filter((i): i is SandboxTemplate => i.kind === 'SandboxTemplate');
  const pools = list.items.filter((i): i is SandboxWarmPool => i.kind === 'SandboxWarmPool');
  expect(templates.map((t) => t.metadata.name)).toEqual(expect.arrayContaining(['genaicode-docker-sandbox-minimal-latest', 'team-python']));
  expect(pools.map((p) => p.spec)).toContainEqual({ replicas: 2, sandboxTemplateRef: { name: 'team-python' } });
  for (const t of templates) {
    expect(t).toMatchObject({ apiVersion: 'extensions.agents.x-k8s.io/v1alpha1', metadata: { namespace: 'sandboxes' } });
    const spec = t.spec.podTemplate.spec;
    expect(spec).toMatchObject({
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      hostNetwork: false,
      hostPID: false,
      hostIPC: false,
      securityContext: { seccompProfile: { type: 'RuntimeDefault' } },
    });
    expect(spec.activeDeadlineSeconds).toBeUndefined();
    expect(spec.containers).toHaveLength(1);
    expect(spec.containers[0]!.securityContext).toMatchObject({
      privileged: false,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    });
    expect(spec.containers[0]!.resources?.limits).toMatchObject({ memory: expect.any(String), cpu: expect.any(String) });
    // The default network is none: the controller's deny-all policy (an empty one), and our label.
    expect(t.spec).toMatchObject({ networkPolicy: {}, networkPolicyManagement: 'Managed' });
    expect(t.spec.podTemplate.metadata?.labels).toEqual({ 'genaicode-docker.network': 'none' });
  }
});

test('doctor in claim mode says so and asks for the claim permissions, naming a missing one', async () => {
  const config = testConfig({ engine: { kind: 'kubernetes', kubernetes: { kubeconfig: standin.kubeconfig } } });
  const collect = async () => {
    const text: string[] = [];
    const code = await doctor(config, { sandboxCheck: false }, (l) => text.push(l));
    return { code, text: text.join('\n') };
  };
  const r = await collect();
  expect(r.text).toContain('each sandbox is an agent-sandbox SandboxClaim there');
  expect(r.text).toMatch(
    /^access {7}ok: sandboxclaims\.extensions\.agents\.x-k8s\.io create, sandboxclaims\.extensions\.agents\.x-k8s\.io get, .*sandboxtemplates\.extensions\.agents\.x-k8s\.io get, sandboxes\.agents\.x-k8s\.io get, .*pods\/exec create/m,
  );
  expect(r.code).toBe(0);
  standin.denied.add('create sandboxclaims');
  try {
    const denied = await collect();
    expect(denied.text).toMatch(
      /^access {7}MISSING sandboxclaims\.extensions\.agents\.x-k8s\.io create \(start a sandbox: the stand-in denies create sandboxclaims\)/m,
    );
    expect(denied.code).toBe(1);
  } finally {
    standin.denied.delete('create sandboxclaims');
  }
});

test('the exit-time remover deletes claims synchronously, from a process that cannot wait on promises', async () => {
  const spec = claimSpec(`exit-${standin.runId}`);
  const answer = await removedSyncElsewhere(standin.kubeconfig, spec);
  expect(answer).toEqual({ id: spec.name, left: [] });
  expect(standin.requests).toContain(`DELETE /apis/extensions.agents.x-k8s.io/v1alpha1/namespaces/sandboxes/sandboxclaims/${answer.id}`);
  await waitFor('the claim and its pod to be gone', async () => (claims.claims.has(answer.id) ? undefined : true), 10_000);
});
