import type { ProjectMount } from '../policy/policy.js';
import { checkImageAllowed, checkProjectMount } from '../policy/policy.js';
import { chooseImage, type ImageChoice, type ImageRequest } from '../images/golden-images.js';
import type { Sandbox } from '../sandbox/sandbox.js';
import type { StartOptions } from '../sandbox/sandbox-manager.js';
import type { ToolContext } from './mcp-tool.js';

/**
 * A container for a tool that starts one (startContainer, runContainerTask): the image
 * chosen (named, a language's, or the project's language's), then refused before anything
 * starts if it is off the allowlist or asks more of the project than project.mount allows.
 */
export async function startChecked(
  ctx: ToolContext,
  request: ImageRequest & { project?: ProjectMount | undefined },
  start: Pick<StartOptions, 'network' | 'name' | 'workdir'>,
): Promise<{ sandbox: Sandbox; choice: ImageChoice }> {
  const { config } = ctx.runtime;
  const manager = ctx.runtime.manager();
  const none = request.image === undefined && request.language === undefined;
  const choice = await chooseImage(
    config,
    manager.engine,
    { image: request.image, language: request.language },
    none ? ctx.runtime.projectLanguage() : undefined,
  );
  checkImageAllowed(choice.image, config.images.allow, config.images.projectAllow);
  const project = checkProjectMount(request.project ?? 'none', config.project.mount);
  const sandbox = await manager.start({ image: choice.image, ...start, project, signal: ctx.signal });
  return { sandbox, choice };
}
