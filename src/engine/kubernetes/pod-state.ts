import type { V1Pod } from '@kubernetes/client-node';
import type { ContainerState } from '../container-engine.js';
import { CONTAINER_NAME, labelsOfPod } from './pod-spec.js';

/** What the adapter reads of a pod's status: pure, beside the adapter that asks for it. */

/** Why a pod that has not started never will: the kubelet's reasons that need a person. */
export const STUCK = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'ErrImageNeverPull',
  'CreateContainerConfigError',
  'CreateContainerError',
  'RunContainerError',
]);

/** The pod as the port's ContainerState. */
export function stateOf(pod: V1Pod): ContainerState {
  const status = pod.status?.containerStatuses?.find((c) => c.name === CONTAINER_NAME);
  const terminated = status?.state?.terminated;
  const name = pod.metadata?.name ?? '';
  const phase = pod.status?.phase ?? 'Pending';
  return {
    id: name,
    name,
    running: phase === 'Running' && status?.state?.running !== undefined && pod.metadata?.deletionTimestamp === undefined,
    status: pod.metadata?.deletionTimestamp ? 'Terminating' : (pod.status?.reason ?? phase),
    oomKilled: terminated?.reason === 'OOMKilled',
    exitCode: terminated?.exitCode ?? null,
    labels: labelsOfPod(pod),
    ...(pod.spec?.containers[0]?.workingDir ? { workdir: pod.spec.containers[0].workingDir } : {}),
  };
}
