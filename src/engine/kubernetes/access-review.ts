import type { AuthorizationV1Api } from '@kubernetes/client-node';

/** One thing the adapter does in the namespace, as the API server's authorizer names it. */
export interface AccessNeed {
  verb: string;
  resource: string;
  subresource?: string;
  group?: string;
  /** What the adapter does with it, for a person. */
  why: string;
}

/**
 * What the adapter needs in its namespace (docs/scale-out.md): pods made, read, listed and
 * deleted; exec into them (the WebSocket upgrade is a GET, a plain exec a create); the deny-all
 * NetworkPolicy made once.
 */
export const ACCESS_NEEDS: readonly AccessNeed[] = [
  { verb: 'create', resource: 'pods', why: 'start a sandbox' },
  { verb: 'get', resource: 'pods', why: 'wait for it and inspect it' },
  { verb: 'list', resource: 'pods', why: 'the sweep by label' },
  { verb: 'delete', resource: 'pods', why: 'stop it' },
  { verb: 'create', resource: 'pods', subresource: 'exec', why: 'run commands' },
  { verb: 'get', resource: 'pods', subresource: 'exec', why: 'run commands (the WebSocket upgrade)' },
  { verb: 'create', resource: 'networkpolicies', group: 'networking.k8s.io', why: "network 'none' (deny-all policy)" },
];

/**
 * In claim mode: the claims made, read, listed and deleted, the template and the Sandbox read,
 * exec into the pod the claim binds and its pod read; no pod or policy of our own is made.
 */
export const CLAIM_ACCESS_NEEDS: readonly AccessNeed[] = [
  { verb: 'create', resource: 'sandboxclaims', group: 'extensions.agents.x-k8s.io', why: 'start a sandbox' },
  { verb: 'get', resource: 'sandboxclaims', group: 'extensions.agents.x-k8s.io', why: 'wait for it and inspect it' },
  { verb: 'list', resource: 'sandboxclaims', group: 'extensions.agents.x-k8s.io', why: 'the sweep by label' },
  { verb: 'delete', resource: 'sandboxclaims', group: 'extensions.agents.x-k8s.io', why: 'stop it' },
  { verb: 'get', resource: 'sandboxtemplates', group: 'extensions.agents.x-k8s.io', why: "check its image's template" },
  { verb: 'get', resource: 'sandboxes', group: 'agents.x-k8s.io', why: 'find the pod a claim binds' },
  { verb: 'get', resource: 'pods', why: 'wait for the pod' },
  { verb: 'create', resource: 'pods', subresource: 'exec', why: 'run commands' },
  { verb: 'get', resource: 'pods', subresource: 'exec', why: 'run commands (the WebSocket upgrade)' },
];

export interface AccessAnswer extends AccessNeed {
  allowed: boolean;
  /** The authorizer's reason, where it gave one. */
  reason?: string;
}

/** `kubectl auth can-i` for each need: the API server's own answer for these credentials, nothing made. */
export async function reviewAccess(
  api: AuthorizationV1Api,
  namespace: string,
  needs: readonly AccessNeed[] = ACCESS_NEEDS,
): Promise<AccessAnswer[]> {
  return Promise.all(
    needs.map(async (need) => {
      const review = await api.createSelfSubjectAccessReview({
        body: {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SelfSubjectAccessReview',
          spec: {
            resourceAttributes: {
              namespace,
              verb: need.verb,
              resource: need.resource,
              ...(need.subresource ? { subresource: need.subresource } : {}),
              ...(need.group ? { group: need.group } : {}),
            },
          },
        },
      });
      const reason = review.status?.reason;
      return { ...need, allowed: review.status?.allowed === true, ...(reason ? { reason } : {}) };
    }),
  );
}

/** `pods/exec create` and the like, as an answer line names a need. */
export function accessName(need: AccessNeed): string {
  return `${need.group ? `${need.resource}.${need.group}` : need.resource}${need.subresource ? `/${need.subresource}` : ''} ${need.verb}`;
}
