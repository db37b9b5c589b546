import type { ContainerEngine } from './container-engine.js';
import { DockerEngine } from './docker-engine.js';
import { KubernetesEngine, type KubernetesSettings } from './kubernetes/kubernetes-engine.js';
import type { ConnectionSettings } from './connection.js';

export interface EngineSettings extends ConnectionSettings {
  /** @default docker */
  kind?: 'docker' | 'kubernetes';
  kubernetes?: KubernetesSettings;
}

/** The engine the configuration names: a Docker API (the default), or a Kubernetes cluster. */
export function createEngine(settings: EngineSettings = {}): ContainerEngine {
  return settings.kind === 'kubernetes' ? new KubernetesEngine(settings.kubernetes) : new DockerEngine(settings);
}
