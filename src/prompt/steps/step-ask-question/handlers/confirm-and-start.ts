import { unenforcedLimitsNote } from '../../../../engine/rootless.js';
import { checkProjectMount, type NetworkMode, type ProjectMount } from '../../../../policy/policy.js';
import type { SandboxErrorCode } from '../../../../errors.js';
import type { HostServices } from '../../../host/host-services.js';
import type { PluginRuntime } from '../../../plugin-runtime.js';
import type { Sandbox } from '../../../../sandbox/sandbox.js';
import type { StartOptions } from '../../../../sandbox/sandbox-manager.js';
import type { Language } from '../../../../config/languages.js';
import { projectChangedText } from '../../../../config/project-trust.js';
import { chooseImage, type ImageChoice } from '../../../../images/golden-images.js';
import { mountDescription } from '../../../../actions/answers.js';

type StartOutcome =
  | { ok: true; sandbox: Sandbox; choice: ImageChoice }
  | { ok: false; answer: { error: string; code: Extract<SandboxErrorCode, 'USER_DECLINED'> } };

/**
 * The one way a handler starts a container: the image (named, or a language's, or the
 * project's language's: golden-images.ts chooseImage), the allowlist (an image the user would
 * never be asked about is refused before asking), then the user's confirmation when
 * configured, then the start, with pull progress as system messages.
 * @throws SandboxError from the policy or the engine (handlers turn it into an answer)
 */
export async function confirmAndStart(
  runtime: PluginRuntime,
  host: HostServices,
  hostOptions: object,
  request: {
    image?: string | undefined;
    language?: Language | undefined;
    name?: string;
    network?: NetworkMode;
    workdir?: string;
    purpose: string;
    /** The project mount the model asked for (none when it asked nothing), at most project.mount. */
    project?: ProjectMount;
    /** The conversation the container belongs to: removed when it ends, unless `keep`. */
    conversation?: { prompt: object; keep: boolean };
  },
): Promise<StartOutcome> {
  const config = runtime.config();
  const choice = await chooseImage(
    config,
    runtime.manager().engine,
    { image: request.image, language: request.language },
    request.image === undefined && request.language === undefined ? runtime.projectLanguage() : undefined,
  );
  const image = choice.image;
  runtime.checkImage(image);
  const network = request.network ?? config.network;
  // Refused before the user is asked: more than project.mount allows.
  const project = checkProjectMount(request.project ?? 'none', config.project.mount);
  if (config.plugin.confirmStart) {
    const mount =
      project === 'none'
        ? 'project not mounted'
        : `project ${config.projectRoot} mounted ${mountDescription(project)} at ${config.workdir}`;
    const limits = `${mount}; memory ${Math.round(config.limits.memory / 1024 ** 2)} MiB, ${config.limits.cpus} CPU${unenforcedLimitsNote(config.engine)}, network ${network}, expires in ${Math.round(config.ttlSeconds / 60)} min`;
    const question = `Start a Docker container from ${image}${request.name ? ` named ${request.name}` : ''} ${request.purpose}? (${limits})${projectChangedText(config)}`;
    if (!(await host.confirm(question, hostOptions))) {
      return { ok: false, answer: { error: `The user declined to start a container from ${image}.`, code: 'USER_DECLINED' } };
    }
  }
  const signal = host.abortSignal();
  const options: StartOptions = {
    image,
    network,
    ...(request.name ? { name: request.name } : {}),
    ...(request.workdir ? { workdir: request.workdir } : {}),
    project,
    ...(signal ? { signal } : {}),
    onPullProgress: (p) => {
      if (/complete|downloaded|pulling from/i.test(p.status)) host.systemMessage(`Pulling ${image}: ${p.id} ${p.status}`);
    },
  };
  const sandbox = await runtime.manager().start(options);
  if (request.conversation && !request.conversation.keep) runtime.conversations().track(request.conversation.prompt, sandbox, signal);
  return { ok: true, sandbox, choice };
}
