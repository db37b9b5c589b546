import type { ActionHandler } from '../../../host/genaicode-types.js';
import type { PluginRuntime } from '../../../plugin-runtime.js';
import { actionListLine } from '../../../../actions/action-spec.js';
import {
  EDIT_CONTAINER_FILE,
  LIST_CONTAINER_DIRECTORY,
  READ_CONTAINER_FILE,
  WRITE_CONTAINER_FILE,
} from '../../../../actions/file-specs.js';
import { noSuchContainer, readFileAnswer } from '../../../../actions/answers.js';
import { defineAction } from './define-action.js';

export function createContainerFileHandlers(
  runtime: PluginRuntime,
): Record<
  'readContainerFile' | 'writeContainerFile' | 'listContainerDirectory' | 'editContainerFile',
  { handler: ActionHandler; description: string }
> {
  const sandboxOf = (containerId: string) => {
    const sandbox = runtime.manager().get(containerId);
    if (!sandbox) throw noSuchContainer(runtime.manager(), containerId);
    return sandbox;
  };

  const read = defineAction(runtime, READ_CONTAINER_FILE, async ({ args, reply }) => {
    const r = await sandboxOf(args.containerId).readFile(args.path, {
      ...(args.startLine !== undefined ? { startLine: args.startLine } : {}),
      ...(args.endLine !== undefined ? { endLine: args.endLine } : {}),
    });
    const answer = readFileAnswer(r);
    return reply(answer, `Read ${r.path}${r.binary ? ' (binary)' : ` lines ${r.startLine}-${r.endLine} of ${r.totalLines}`}.`);
  });

  const write = defineAction(runtime, WRITE_CONTAINER_FILE, async ({ args, reply }) => {
    const r = await sandboxOf(args.containerId).writeFile(args.path, args.content);
    return reply(r, `${r.created ? 'Created' : 'Wrote'} ${r.path} (${r.bytesWritten} bytes).`);
  });

  const list = defineAction(runtime, LIST_CONTAINER_DIRECTORY, async ({ args, reply }) => {
    const r = await sandboxOf(args.containerId).listDirectory(args.path ?? '.', {
      ...(args.depth !== undefined ? { depth: args.depth } : {}),
    });
    return reply(r, `Listed ${r.path} (${r.entries.length} entries).`);
  });

  const edit = defineAction(runtime, EDIT_CONTAINER_FILE, async ({ args, reply }) => {
    const r = await sandboxOf(args.containerId).editFile(args.path, args.oldText, args.newText);
    return reply(r, `Edited ${r.path}.`);
  });

  return {
    readContainerFile: { handler: read, description: actionListLine(READ_CONTAINER_FILE) },
    writeContainerFile: { handler: write, description: actionListLine(WRITE_CONTAINER_FILE) },
    listContainerDirectory: { handler: list, description: actionListLine(LIST_CONTAINER_DIRECTORY) },
    editContainerFile: { handler: edit, description: actionListLine(EDIT_CONTAINER_FILE) },
  };
}
