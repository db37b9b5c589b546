import type { CustomObjectsApi, V1APIResourceList } from '@kubernetes/client-node';
import type { ContainerSpec } from '../../../src/engine/container-engine.js';
import { claimsServed } from '../../../src/engine/kubernetes/claim-sandboxes.js';
import {
  checkTemplate,
  chooseMode,
  claimFor,
  claimProgress,
  podOfSandbox,
  templateFor,
  templateNameOf,
  warmPoolFor,
  type SandboxClaim,
} from '../../../src/engine/kubernetes/claim-spec.js';
import { podFor } from '../../../src/engine/kubernetes/pod-spec.js';

const base: ContainerSpec = {
  image: 'genaicode-docker/sandbox-minimal:latest',
  entrypoint: ['sleep'],
  cmd: ['600'],
  env: [],
  labels: { 'genaicode-docker.managed': 'true', 'genaicode-docker.owner': 'host:42', 'genaicode-docker.session': 's-1' },
  workdir: '/workspace',
  user: '1000:1000',
  memoryBytes: 512 * 1024 * 1024,
  nanoCpus: 1_000_000_000,
  pidsLimit: 256,
  network: 'none',
  readOnlyRoot: true,
  tmpfs: [{ path: '/tmp', sizeBytes: 1024 }],
  tmpfsVolumes: [{ path: '/workspace', sizeBytes: 2048 }],
  binds: [],
  capAdd: ['CHOWN'],
  autoRemove: true,
  diskBytes: 1 << 30,
};

test('the claim names its template, carries our labels, and is deleted by the cluster at the expiry', () => {
  const expiresAt = new Date('2026-11-26T03:00:00.123Z');
  const claim = claimFor({ ...base, env: ['A=1', 'B=x=y'] }, 'gcd-1', 'genaicode-docker-sandbox-minimal-latest', expiresAt);
  expect(claim).toEqual({
    apiVersion: 'extensions.agents.x-k8s.io/v1alpha1',
    kind: 'SandboxClaim',
    metadata: {
      name: 'gcd-1',
      // A label only where a label value can hold it; every one verbatim as an annotation.
      labels: { 'genaicode-docker.managed': 'true', 'genaicode-docker.session': 's-1' },
      annotations: { ...base.labels, 'genaicode-docker.image': base.image },
    },
    spec: {
      sandboxTemplateRef: { name: 'genaicode-docker-sandbox-minimal-latest' },
      lifecycle: { shutdownTime: '2026-11-26T03:00:00Z', shutdownPolicy: 'Delete' },
      env: [
        { name: 'A', value: '1' },
        { name: 'B', value: 'x=y' },
      ],
    },
  });
  // No environment of its own: no env field, so the claim may adopt a warm pod.
  expect(claimFor(base, 'gcd-2', 't', expiresAt).spec).not.toHaveProperty('env');
});

test('discovery: auto is a claim only where the resource is served; pod and claim are taken as set', async () => {
  expect(chooseMode('auto', true)).toBe('claim');
  expect(chooseMode('auto', false)).toBe('pod');
  expect(chooseMode('pod', true)).toBe('pod');
  expect(chooseMode('claim', false)).toBe('claim');
  const answering = (answer: () => Promise<V1APIResourceList>): Pick<CustomObjectsApi, 'getAPIResources'> => ({ getAPIResources: answer });
  const list = (names: string[]): V1APIResourceList => ({
    groupVersion: 'extensions.agents.x-k8s.io/v1alpha1',
    resources: names.map((name) => ({ name, kind: name, namespaced: true, singularName: name, verbs: ['get'] })),
  });
  expect(await claimsServed(answering(async () => list(['sandboxclaims', 'sandboxtemplates'])))).toBe(true);
  // The group served without claims (only templates installed): pods.
  expect(await claimsServed(answering(async () => list(['sandboxtemplates'])))).toBe(false);
  expect(await claimsServed(answering(() => Promise.reject(Object.assign(new Error('not found'), { code: 404 }))))).toBe(false);
  // Any other failure is not an answer: it is said, not taken for "no claims".
  await expect(claimsServed(answering(() => Promise.reject(Object.assign(new Error('forbidden'), { code: 403 }))))).rejects.toThrow(
    'forbidden',
  );
});

test('template names: derived from the image within 63 characters, distinct for long ones, or configured', () => {
  expect(templateNameOf('genaicode-docker/python:latest')).toBe('genaicode-docker-python-latest');
  expect(templateNameOf('registry.example.com:5000/team/Tool_X:1.2')).toBe('genaicode-docker-registry-example-com-5000-team-tool-x-1-2');
  const long1 = templateNameOf(`registry.example.com/${'a'.repeat(80)}/one:1`);
  const long2 = templateNameOf(`registry.example.com/${'a'.repeat(80)}/two:1`);
  for (const n of [long1, long2]) expect(n).toMatch(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/);
  expect(long1).not.toBe(long2);
  expect(templateNameOf('genaicode-docker/python:latest', { 'genaicode-docker/python:latest': 'team-python' })).toBe('team-python');
});

test('the template is the pod path\u2019s pod without what belongs to one sandbox, closed for network none', () => {
  const t = templateFor(base, 'tpl', 'sandboxes');
  const pod = podFor(base, 'x', 600).spec!;
  const spec = t.spec.podTemplate.spec;
  expect(spec.securityContext).toEqual(pod.securityContext);
  expect(spec.containers[0]!.securityContext).toEqual(pod.containers[0]!.securityContext);
  expect(spec.containers[0]!.resources).toEqual(pod.containers[0]!.resources);
  expect(spec).toMatchObject({ automountServiceAccountToken: false, enableServiceLinks: false, hostNetwork: false });
  expect(spec.activeDeadlineSeconds).toBeUndefined();
  expect(t.spec).toMatchObject({ networkPolicy: {}, networkPolicyManagement: 'Managed' });
  expect(t.metadata).toMatchObject({ name: 'tpl', namespace: 'sandboxes' });
  // Bridge: no policy of ours, the controller's default.
  expect(templateFor({ ...base, network: 'bridge' }, 'b').spec).not.toHaveProperty('networkPolicy');
  expect(warmPoolFor('tpl', 3)).toMatchObject({ kind: 'SandboxWarmPool', spec: { replicas: 3, sandboxTemplateRef: { name: 'tpl' } } });
  expect(() => checkTemplate(t, base)).not.toThrow();
  // Key order as an API server returns it does not matter.
  const reordered = JSON.parse(
    JSON.stringify(t, (_k, v: unknown) =>
      v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).reverse()) : v,
    ),
  );
  expect(() => checkTemplate(reordered, base)).not.toThrow();
});

test('a template that does not give the start what it asks for is refused, naming the field', () => {
  const t = templateFor(base, 'tpl');
  for (const [over, field] of [
    [{ memoryBytes: 1 << 30 }, 'resources'],
    [{ user: '0:0' }, 'podSecurityContext'],
    [{ capAdd: [] }, 'securityContext'],
    [{ image: 'other:1' }, 'image'],
    [{ workdir: '/elsewhere', tmpfsVolumes: [{ path: '/elsewhere', sizeBytes: 2048 }] }, 'workingDir'],
  ] as Array<[Partial<ContainerSpec>, string]>)
    expect(() => checkTemplate(t, { ...base, ...over })).toThrow(
      new RegExp(`SandboxTemplate tpl does not give this sandbox what it needs: its ${field} is`),
    );
  const open = templateFor({ ...base, network: 'bridge' }, 'open');
  expect(() => checkTemplate(open, base)).toThrow(/lets its pods use the network/);
});

test('the claim\u2019s progress and the pod its Sandbox runs are read from their status and annotation', () => {
  const claim = (status: SandboxClaim['status']): SandboxClaim => ({
    apiVersion: 'extensions.agents.x-k8s.io/v1alpha1',
    kind: 'SandboxClaim',
    metadata: { name: 'c' },
    spec: { sandboxTemplateRef: { name: 't' } },
    ...(status ? { status } : {}),
  });
  expect(claimProgress(claim(undefined))).toEqual({ ready: false });
  expect(claimProgress(claim({ conditions: [{ type: 'Ready', status: 'False', reason: 'SandboxNotReady', message: 'm' }] }))).toEqual({
    ready: false,
    last: { type: 'Ready', status: 'False', reason: 'SandboxNotReady', message: 'm' },
  });
  expect(claimProgress(claim({ conditions: [{ type: 'Ready', status: 'True' }], sandbox: { name: 's' } }))).toMatchObject({
    ready: true,
    sandbox: 's',
  });
  expect(podOfSandbox({ metadata: { name: 's', annotations: { 'agents.x-k8s.io/pod-name': 'warm-7' } } })).toBe('warm-7');
  expect(podOfSandbox({ metadata: { name: 's' } })).toBe('s');
});
