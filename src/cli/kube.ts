import type { Config } from '../config/config-schema.js';
import { LANGUAGES } from '../config/languages.js';
import { templateFor, templateNameOf, warmPoolFor, type SandboxTemplate, type SandboxWarmPool } from '../engine/kubernetes/claim-spec.js';
import { imageForLanguage } from '../images/language-images.js';
import { containerUser } from '../sandbox/container-user.js';
import { containerSpec } from '../sandbox/start-plan.js';

/**
 * `genaicode-docker kube templates`: the SandboxTemplate and SandboxWarmPool of each golden
 * image (and the default image) for agent-sandbox's claim mode, as one Kubernetes List for
 * `kubectl apply -f -`. Each template's pod is the one the pod path would make for a start
 * with this configuration and no options (podFor: the same hardening, written once), which
 * is also what a claim's start checks the applied template against.
 */

export interface KubeTemplatesOptions {
  namespace?: string;
  /** Warm pods per image; 0 prints no warm pools. */
  replicas: number;
  /** Only these images. @default the default image and every language's */
  images?: string[];
}

export interface KubeList {
  apiVersion: 'v1';
  kind: 'List';
  items: Array<SandboxTemplate | SandboxWarmPool>;
}

/** The images that get a template: the default one, then each language's. */
export function templateImages(config: Config): string[] {
  return [...new Set([config.images.default, ...LANGUAGES.map((l) => imageForLanguage(config, l))])];
}

export function kubeTemplates(config: Config, o: KubeTemplatesOptions): KubeList {
  const items: Array<SandboxTemplate | SandboxWarmPool> = [];
  const templates = config.engine.kubernetes?.templates ?? {};
  for (const image of o.images ?? templateImages(config)) {
    const name = templateNameOf(image, templates);
    const { spec } = containerSpec(config, 'template', {}, { image, name, user: containerUser(config, []), binds: [], project: undefined });
    // A cluster takes the disk limit as the pod's ephemeral-storage, as every start asks it to (createWithDiskLimit).
    items.push(templateFor({ ...spec, diskBytes: config.limits.disk }, name, o.namespace));
    if (o.replicas > 0) items.push(warmPoolFor(name, o.replicas, o.namespace));
  }
  return { apiVersion: 'v1', kind: 'List', items };
}
