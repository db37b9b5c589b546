import { SandboxError } from '../errors.js';
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

/**
 * Refuses a start that wants host folders on an engine that cannot reach them (a cluster),
 * before anything is made, with the engine's sentence on why and what to do instead.
 * @throws SandboxError POLICY_VIOLATION
 */
export function refuseHostMounts(engine: ContainerEngine, wanted: boolean): void {
  if (wanted && engine.hostMountRefusal)
    throw new SandboxError('POLICY_VIOLATION', engine.hostMountRefusal, { data: { rule: 'projectMount' } });
}
