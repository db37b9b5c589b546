import { SandboxError } from '../../../src/errors.js';
import type { ContainerSpec } from '../../../src/engine/container-engine.js';
import { exitCodeOfStatus, podCommand } from '../../../src/engine/kubernetes/pod-exec.js';
import { denyAllPolicy, labelSelector, NETWORK_LABEL, podFor } from '../../../src/engine/kubernetes/pod-spec.js';

const base: ContainerSpec = {
  image: 'genaicode-docker/sandbox-minimal:latest',
  entrypoint: ['sleep'],
  cmd: ['600'],
  env: ['A=1', 'B=x=y'],
  labels: {
    'genaicode-docker.managed': 'true',
    'genaicode-docker.owner': 'host:42',
    'genaicode-docker.expires-at': '2026-11-25T20:00:00.000Z',
  },
  workdir: '/workspace',
  memoryBytes: 512 * 1024 * 1024,
  nanoCpus: 1_500_000_000,
  pidsLimit: 256,
  network: 'none',
  readOnlyRoot: true,
  tmpfs: [{ path: '/tmp', sizeBytes: 1024 }],
  tmpfsVolumes: [{ path: '/workspace', sizeBytes: 2048 }],
  binds: [],
  capAdd: ['CHOWN'],
  autoRemove: true,
};

test('the pod says the hardening in the cluster’s words', () => {
  const pod = podFor({ ...base, user: '1000:1001', diskBytes: 4096 }, 'sandbox-1', 599.2);
  const spec = pod.spec!;
  expect(spec).toMatchObject({
    activeDeadlineSeconds: 600,
    restartPolicy: 'Never',
    automountServiceAccountToken: false,
    enableServiceLinks: false,
    hostNetwork: false,
    hostPID: false,
    hostIPC: false,
    securityContext: { runAsUser: 1000, runAsGroup: 1001, runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
  });
  expect(spec.containers[0]).toMatchObject({
    command: ['sleep'],
    args: ['600'],
    env: [
      { name: 'A', value: '1' },
      { name: 'B', value: 'x=y' },
    ],
    workingDir: '/workspace',
    resources: { limits: { memory: String(512 * 1024 * 1024), cpu: '1500m', 'ephemeral-storage': '4096' } },
    securityContext: {
      privileged: false,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'], add: ['CHOWN'] },
    },
    volumeMounts: [
      { name: 'tmpfs-0', mountPath: '/tmp' },
      { name: 'tmpfs-1', mountPath: '/workspace' },
    ],
  });
  expect(spec.volumes).toEqual([
    { name: 'tmpfs-0', emptyDir: { medium: 'Memory', sizeLimit: '1024' } },
    { name: 'tmpfs-1', emptyDir: { medium: 'Memory', sizeLimit: '2048' } },
  ]);
  // Values a label cannot hold are annotations only; the network label puts it under the deny-all policy.
  expect(pod.metadata?.labels).toEqual({ 'genaicode-docker.managed': 'true', [NETWORK_LABEL]: 'none' });
  expect(pod.metadata?.annotations).toEqual(base.labels);
  expect(denyAllPolicy().spec).toEqual({ podSelector: { matchLabels: { [NETWORK_LABEL]: 'none' } }, policyTypes: ['Ingress', 'Egress'] });
});

test('a root or unset user is not claimed to be non-root; bridge has no network label', () => {
  const root = podFor({ ...base, user: '0:0', network: 'bridge' }, 'sandbox-2', 10).spec!;
  expect(root.securityContext?.runAsNonRoot).toBe(false);
  expect(podFor({ ...base, network: 'bridge' }, 'sandbox-3', 10).spec!.securityContext?.runAsUser).toBeUndefined();
  expect(podFor({ ...base, network: 'bridge' }, 'sandbox-3', 10).metadata?.labels?.[NETWORK_LABEL]).toBeUndefined();
});

test.each([
  ['a bind', { binds: [{ hostPath: '/home/me/project', containerPath: '/workspace', readOnly: true }] }, 'POLICY_VIOLATION'],
  ['an overlay', { overlayVolumes: [{ containerPath: '/workspace', lowerDir: '/a', upperDir: '/b', workDir: '/c' }] }, 'POLICY_VIOLATION'],
  ['a user name', { user: 'node' }, 'INVALID_CONFIG'],
  ['a label key Kubernetes refuses', { labels: { 'bad key!': 'x' } }, 'INVALID_ARGUMENT'],
] as Array<[string, Partial<ContainerSpec>, string]>)('%s is refused with a sentence', (_what, over, code) => {
  let caught: unknown;
  try {
    podFor({ ...base, ...over }, 'sandbox-4', 10);
  } catch (e) {
    caught = e;
  }
  expect(caught).toBeInstanceOf(SandboxError);
  expect(caught).toMatchObject({ code });
});

test.each(['Upper', 'under_score', '-lead', 'x'.repeat(254)])('the pod name %s is refused', (name) => {
  expect(() => podFor(base, name, 10)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }) as Error);
});

test('the exit code is read from the exec status', () => {
  expect(exitCodeOfStatus({ status: 'Success' })).toBe(0);
  expect(
    exitCodeOfStatus({ status: 'Failure', reason: 'NonZeroExitCode', details: { causes: [{ reason: 'ExitCode', message: '42' }] } }),
  ).toBe(42);
  expect(exitCodeOfStatus({ status: 'Failure', reason: 'InternalError', message: 'boom' })).toBeNull();
  expect(exitCodeOfStatus('nonsense')).toBeNull();
});

test('env and working folder go into the command line, the command itself untouched', () => {
  expect(podCommand({ cmd: ['ls', '-l'] })).toEqual(['ls', '-l']);
  expect(podCommand({ cmd: ['ls'], env: ['A=1'], workdir: '/w x' })).toEqual([
    'env',
    'A=1',
    '/bin/sh',
    '-c',
    'cd -- "$0" || exit 126; exec "$@"',
    '/w x',
    'ls',
  ]);
});

test('a selector holds what a label can; the rest is matched on annotations', () => {
  expect(labelSelector({ a: 'true', owner: 'host:1' })).toEqual({ selector: 'a=true', rest: [['owner', 'host:1']] });
});
