/**
 * `genaicode-docker doctor` and `cleanup` on whichever engine is configured: a Kubernetes
 * cluster (the stand-in API server of test/support/kube-standin.ts, its pods real containers on
 * the local engine), Podman's API (scripts/engine/podman.sh), and rootless Podman. What they
 * did is observed on the stand-in's records and on the engines themselves.
 */
import { execFile } from 'node:child_process';
import { cleanup } from '../../../src/cli/cleanup.js';
import { doctor } from '../../../src/cli/doctor.js';
import { DockerEngine } from '../../../src/engine/docker-engine.js';
import { KubernetesEngine } from '../../../src/engine/kubernetes/kubernetes-engine.js';
import type { ContainerSpec } from '../../../src/engine/container-engine.js';
import { LABEL } from '../../../src/index.js';
import { engineSuite, MINIMAL_IMAGE } from '../../support/engine.js';
import { KubeStandin } from '../../support/kube-standin.js';
import { testConfig } from '../../support/temp-dirs.js';

let standin: KubeStandin;
engineSuite('engines-doctor-cleanup', { afterAll: () => standin?.stop() });

beforeAll(async () => {
  standin = await new KubeStandin().start();
});

async function lines(run: (out: (line: string) => void) => Promise<number>): Promise<{ code: number; text: string }> {
  const out: string[] = [];
  const code = await run((l) => out.push(l));
  return { code, text: out.join('\n') };
}

/** A managed container of another machine's owner, expired two minutes ago: the sweep's to remove. */
function expiredSpec(name: string): ContainerSpec {
  return {
    image: MINIMAL_IMAGE,
    name,
    entrypoint: ['sleep'],
    cmd: ['300'],
    env: [],
    labels: {
      [LABEL.managed]: 'true',
      [LABEL.owner]: 'elsewhere-host:4194301',
      [LABEL.session]: `doctor-cleanup-${standin.runId}`,
      [LABEL.expiresAt]: new Date(Date.now() - 120_000).toISOString(),
    },
    workdir: '/',
    // With 64 MiB a start on Podman failed once under load (runc: write child: broken pipe);
    // the sandbox's own default is 512 MiB.
    memoryBytes: 256 << 20,
    nanoCpus: 500_000_000,
    pidsLimit: 32,
    network: 'none',
    readOnlyRoot: false,
    tmpfs: [],
    binds: [],
    capAdd: [],
    autoRemove: false,
    expiresAt: new Date(Date.now() + 300_000),
  };
}

function socketOf(rootless: boolean): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile('bash', ['scripts/engine/podman.sh', 'env', ...(rootless ? ['--rootless'] : [])], (error, stdout) =>
      error
        ? reject(
            new Error(
              `Podman's service is not running: bash scripts/engine/podman.sh start${rootless ? ' --rootless' : ''} (${error.message})`,
            ),
          )
        : resolve(/unix:\/\/(\S+)/.exec(stdout)?.[1] ?? ''),
    ),
  );
}

describe('on a Kubernetes cluster (the stand-in)', () => {
  const kube = () => testConfig({ engine: { kind: 'kubernetes', kubernetes: { kubeconfig: standin.kubeconfig } } });

  test('doctor names the API server and namespace, and that pods may be created and exec’d, without making one', async () => {
    const before = standin.requests.length;
    const r = await lines((out) => doctor(kube(), { sandboxCheck: false }, out));
    expect(r.text).toMatch(/^engine {7}ok: kubernetes v1\.31\.0-standin \(API 1\.31, linux\/amd64\) at https:\/\/127\.0\.0\.1:\d+$/m);
    expect(r.text).toContain(`cluster      API server ${standin.url}, namespace sandboxes: each sandbox is a pod there`);
    expect(r.text).toMatch(
      /^access {7}ok: pods create, pods get, pods list, pods delete, pods\/exec create, pods\/exec get, networkpolicies\.networking\.k8s\.io create$/m,
    );
    expect(r.text).toMatch(
      new RegExp(`^image {8}${MINIMAL_IMAGE}: pulled by the node that runs the pod.*no node has it unless it is pushed`, 'm'),
    );
    expect(r.text).not.toMatch(/^image {8}(present|missing)/m);
    expect(r.code).toBe(0);
    const asked = standin.requests.slice(before);
    expect(asked.filter((q) => q === 'POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews')).toHaveLength(7);
    expect(asked.filter((q) => q.startsWith('POST /api/v1/namespaces/'))).toEqual([]);
  });

  test.each([
    [
      'create pods/exec',
      /^access {7}MISSING pods\/exec create \(run commands: the stand-in denies create pods\/exec\); allowed: pods create,/m,
    ],
    ['create pods', /^access {7}MISSING pods create \(start a sandbox: the stand-in denies create pods\)/m],
    ['list pods', /^access {7}MISSING pods list \(the sweep by label: the stand-in denies list pods\)/m],
  ])('doctor fails when the account may not %s, and says which and why', async (denied, line) => {
    standin.denied.add(denied);
    try {
      const r = await lines((out) => doctor(kube(), { sandboxCheck: false }, out));
      expect(r.text).toMatch(line);
      expect(r.code).toBe(1);
    } finally {
      standin.denied.delete(denied);
    }
  });

  test('doctor --sandbox-check starts a pod, runs a command in it and deletes it', async () => {
    const before = standin.requests.length;
    const r = await lines((out) => doctor(kube(), { sandboxCheck: true }, out));
    expect(r.text).toMatch(/^sandbox {6}ok: start, exec, stop of genaicode-docker\/sandbox-minimal:latest in \d+ ms$/m);
    expect(r.code).toBe(0);
    const asked = standin.requests.slice(before);
    expect(asked.filter((q) => q === 'POST /api/v1/namespaces/sandboxes/pods')).toHaveLength(1);
    expect(asked.some((q) => /^UPGRADE \/api\/v1\/namespaces\/sandboxes\/pods\/[^/]+\/exec$/.test(q))).toBe(true);
    expect(asked.some((q) => /^DELETE \/api\/v1\/namespaces\/sandboxes\/pods\/[^/]+$/.test(q))).toBe(true);
  });

  test('cleanup sweeps pods by label: a dry run lists an expired one, then cleanup deletes it', async () => {
    const engine = new KubernetesEngine({ kubeconfig: standin.kubeconfig });
    const name = `expired-${standin.runId}`;
    await engine.startContainer(await engine.createContainer(expiredSpec(name)));
    const dry = await lines((out) => cleanup(kube(), { all: false, dryRun: true }, out));
    expect(dry.text).toMatch(/^engine kubernetes v1\.31\.0-standin at https:\/\/127\.0\.0\.1:\d+ \(namespace sandboxes\)$/m);
    expect(dry.text).toMatch(new RegExp(`^would remove ${name} \\(${name.slice(0, 12)}\\): expired, owner elsewhere-host:4194301$`, 'm'));
    expect(standin.pods.has(name)).toBe(true);
    const real = await lines((out) => cleanup(kube(), { all: false, dryRun: false }, out));
    expect(real.text).toMatch(new RegExp(`^removed ${name} `, 'm'));
    expect(real.code).toBe(0);
    expect(standin.pods.has(name)).toBe(false);
    expect(standin.requests).toContain(`DELETE /api/v1/namespaces/sandboxes/pods/${name}`);
  });
});

describe('on Podman', () => {
  test('doctor names Podman and what it allows; cleanup removes an expired container there', async () => {
    const socketPath = await socketOf(false);
    const config = testConfig({ engine: { socketPath } });
    const d = await lines((out) => doctor(config, { sandboxCheck: false }, out));
    expect(d.text).toMatch(/^engine {7}ok: podman 4\.\d+\.\d+ .* at unix:\/\//m);
    // Every project mount for a process running as root (the overlay a named volume of Podman's API), 'ro' only otherwise.
    expect(d.text).toContain(
      `local engine on the socket ${socketPath} (Podman): ${process.getuid?.() === 0 ? 'every project mount works' : "'ro' project mounts work"}`,
    );
    expect(d.text).toMatch(new RegExp(`^image {8}present: ${MINIMAL_IMAGE}$`, 'm'));

    const engine = new DockerEngine({ socketPath });
    const name = `gcd-expired-${standin.runId}`;
    const id = await engine.createContainer(expiredSpec(name));
    try {
      await engine.startContainer(id);
      const c = await lines((out) => cleanup(config, { all: false, dryRun: false }, out));
      expect(c.text).toMatch(/^engine podman 4\.\d+\.\d+ at unix:\/\//m);
      expect(c.text).toMatch(new RegExp(`^removed ${name} \\(${id.slice(0, 12)}\\): expired, owner elsewhere-host:4194301$`, 'm'));
      expect(await engine.inspectContainer(id)).toBeUndefined();
    } finally {
      await engine.removeContainer(id, true);
    }
  });

  test('doctor on rootless Podman: says it is rootless and, on cgroups v1, that every start is refused (a problem)', async () => {
    const socketPath = await socketOf(true);
    const info = await new DockerEngine({ socketPath }).info();
    const d = await lines((out) => doctor(testConfig({ engine: { socketPath } }), { sandboxCheck: false }, out));
    if (info.cgroupVersion === '1') {
      expect(d.text).toContain(
        `local engine on the socket ${socketPath}, rootless on cgroups v1: it cannot enforce memory, CPU and process limits there, so every start is refused`,
      );
      expect(d.code).toBe(1);
    } else {
      expect(d.text).toContain(`local engine on the socket ${socketPath} (rootless Podman): containers get keep-id`);
    }
  });
});
