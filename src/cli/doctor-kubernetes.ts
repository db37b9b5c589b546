import type { Config } from '../config/config-schema.js';
import { displayText as t } from '../display-text.js';
import { accessName } from '../engine/kubernetes/access-review.js';
import type { KubernetesEngine } from '../engine/kubernetes/kubernetes-engine.js';
import { isSandboxError } from '../errors.js';
import { imageMatches } from '../policy/policy.js';

/**
 * What `doctor` says of a cluster (engine.kind kubernetes): where its API server and namespace
 * are, whether these credentials may do what a sandbox needs there (the API server's own
 * SelfSubjectAccessReview, nothing made), and where the image comes from. Returns the lines
 * and how many of them are problems.
 */
export async function kubernetesLines(engine: KubernetesEngine, config: Config): Promise<{ lines: string[]; problems: number }> {
  const namespace = await engine.namespace();
  let problems = 0;
  let mode: string;
  try {
    mode =
      (await engine.mode()) === 'claim'
        ? 'each sandbox is an agent-sandbox SandboxClaim there, from the SandboxTemplate of its image (genaicode-docker kube templates)'
        : 'each sandbox is a pod there';
  } catch (e) {
    problems++;
    mode = `MODE UNKNOWN: ${t(isSandboxError(e) ? e.message : String(e), 2000)}`;
  }
  const lines = [
    `cluster      API server ${t(engine.server)}, namespace ${t(namespace)}: ${mode}; host folders (project mounts, mounts) are refused, the pods run on the cluster's nodes`,
  ];
  try {
    const answers = await engine.access();
    const denied = answers.filter((a) => !a.allowed);
    problems += denied.length;
    lines.push(
      denied.length === 0
        ? `access       ok: ${answers.map(accessName).join(', ')}`
        : `access       MISSING ${denied.map((a) => `${accessName(a)} (${a.why}${a.reason ? `: ${t(a.reason)}` : ''})`).join('; ')}; allowed: ${
            answers
              .filter((a) => a.allowed)
              .map(accessName)
              .join(', ') || '(none)'
          }`,
    );
  } catch (e) {
    problems++;
    lines.push(
      `access       UNKNOWN: the API server did not answer a SelfSubjectAccessReview: ${t(isSandboxError(e) ? e.message : String(e), 2000)}`,
    );
  }
  const image = config.images.default;
  lines.push(
    `image        ${t(image)}: pulled by the node that runs the pod, not checked from here` +
      (imageMatches(image, config.images.localOnly)
        ? '; it is built on this machine (images.localOnly), so no node has it unless it is pushed: set images.registry (docs/scale-out.md)'
        : ''),
  );
  return { lines, problems };
}
