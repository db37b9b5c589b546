/**
 * The Pod the Kubernetes adapter generates, run by a real OCI runtime: `podman kube play`
 * reads Kubernetes YAML (JSON is YAML) and runs it with runc, so a field the runtime would
 * refuse, or a securityContext it would not apply, shows here. The golden image must be in
 * Podman's store (`bash scripts/setup.sh --test` with Podman set up loads it).
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { podFor } from '../../../src/engine/kubernetes/pod-spec.js';
import { MINIMAL_IMAGE } from '../../support/engine.js';
import { removeTempDirs, tempDir, testConfig } from '../../support/temp-dirs.js';
import { kubeTemplates } from '../../../src/cli/kube.js';
import type { SandboxTemplate } from '../../../src/engine/kubernetes/claim-spec.js';

const dir = tempDir('kube-play-');
// Podman 4.3 here cannot set its default RLIMIT_NOFILE (docs/ENVIRONMENT): none, as the project's own set-up does.
const CONF = join(dir, 'containers.conf');
writeFileSync(CONF, '[containers]\ndefault_ulimits = []\n');

function podman(args: string[], timeoutMs = 120_000): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile('podman', args, { timeout: timeoutMs, env: { ...process.env, CONTAINERS_CONF: CONF } }, (error, stdout, stderr) => {
      if (error && (error as NodeJS.ErrnoException).code === 'ENOENT') {
        reject(new Error('podman is not installed: this test runs the generated Pod with `podman kube play` (apt-get install podman).'));
        return;
      }
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

afterAll(() => removeTempDirs());

/** Plays `pod` with `podman kube play`, runs `script` in its container and hands `check` its output; the pod is removed at the end. */
async function inPlayedPod(name: string, pod: object, script: string, check: (stdout: string) => Promise<void> | void): Promise<void> {
  const file = join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(pod));
  try {
    const play = await podman(['kube', 'play', file]);
    expect({ code: play.code, stderr: play.stderr }).toEqual({ code: 0, stderr: '' });
    const r = await podman(['exec', `${name}-sandbox`, 'sh', '-c', script]);
    expect(r.code).toBe(0);
    await check(r.stdout);
  } finally {
    await podman(['pod', 'rm', '-f', '-t', '0', name]);
  }
}

test('podman kube play runs the generated Pod with its securityContext: user, no capabilities, no new privileges, read-only root', async () => {
  const name = `gcd-kube-play-${randomBytes(4).toString('hex')}`;
  const pod = podFor(
    {
      image: MINIMAL_IMAGE,
      name,
      entrypoint: ['sleep'],
      cmd: ['120'],
      env: ['GREETING=hello there'],
      labels: { 'genaicode-docker.managed': 'true', 'genaicode-docker.owner': 'host:1' },
      workdir: '/work',
      user: '1000:1000',
      memoryBytes: 128 * 1024 * 1024,
      nanoCpus: 500_000_000,
      pidsLimit: 64,
      network: 'none',
      readOnlyRoot: true,
      tmpfs: [{ path: '/tmp', sizeBytes: 1 << 20 }],
      tmpfsVolumes: [{ path: '/work', sizeBytes: 1 << 20 }],
      binds: [],
      capAdd: [],
      autoRemove: true,
      diskBytes: 1 << 30,
    },
    name,
    120,
  );
  await inPlayedPod(
    name,
    pod,
    'id -u; id -g; grep -E "^(CapEff|NoNewPrivs)" /proc/self/status; pwd; echo "$GREETING"; touch /rootfile 2>&1 || echo readonly; touch /work/ok && echo work-writable',
    async (stdout) => {
      expect(stdout).toMatch(/^1000\n1000\nCapEff:\s+0+\nNoNewPrivs:\s+1\n\/work\nhello there\n/);
      expect(stdout).toMatch(/readonly\nwork-writable\n$/);
      const limit = await podman(['inspect', '-f', '{{.HostConfig.Memory}} {{.HostConfig.Privileged}}', `${name}-sandbox`]);
      expect(limit.stdout.trim()).toBe(`${128 * 1024 * 1024} false`);
    },
  );
  expect((await podman(['pod', 'exists', name])).code).not.toBe(0);
});

test('podman kube play runs the pod of a SandboxTemplate that kube templates prints: the same hardening', async () => {
  const name = `gcd-kube-tpl-${randomBytes(4).toString('hex')}`;
  const list = kubeTemplates(testConfig({ engine: { kind: 'kubernetes' }, user: '1000:1000', readOnlyRoot: true }), {
    replicas: 0,
    images: [MINIMAL_IMAGE],
  });
  const template = list.items[0] as SandboxTemplate;
  // What the agent-sandbox controller makes of the template: a pod of its podTemplate.
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels: template.spec.podTemplate.metadata?.labels },
    spec: template.spec.podTemplate.spec,
  };
  await inPlayedPod(
    name,
    pod,
    'id -u; grep -E "^(CapEff|NoNewPrivs)" /proc/self/status; touch /rootfile 2>&1 || echo readonly',
    (stdout) => {
      expect(stdout).toMatch(/^1000\nCapEff:\s+[0-9a-f]+\nNoNewPrivs:\s+1\n(?:.*Read-only file system\n)?readonly\n$/);
      // Exactly the template's capabilities (the configured ones, every other dropped): none of the runtime's defaults like NET_RAW.
      const BITS: Record<string, number> = { CHOWN: 0, DAC_OVERRIDE: 1, FOWNER: 3, FSETID: 4, KILL: 5, SETGID: 6, SETUID: 7 };
      const added = template.spec.podTemplate.spec.containers[0]!.securityContext!.capabilities!.add ?? [];
      const want = added.reduce((bits, cap) => bits | (1n << BigInt(BITS[cap]!)), 0n);
      expect(BigInt(`0x${/CapEff:\s+([0-9a-f]+)/.exec(stdout)![1]}`)).toBe(want);
    },
  );
});
