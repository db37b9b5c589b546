import { z } from 'zod/v4';
import { defineActionSpec } from './action-spec.js';
import { containerIdArg } from './argument-schemas.js';

/**
 * Files inside a container started with startContainer (seed 002). The argument names are
 * not ones genaicode reads as host paths (filePath, source, destination...): `path` is a
 * path in the container, resolved from its working folder.
 */

/** A path in the container: relative to its working folder, or absolute inside it. Checked against its real file system when used. */
const pathArg = z
  .string()
  .min(1, 'path is required')
  .max(4096, 'path is at most 4096 characters')
  .refine((p) => !p.includes('\0'), 'path must not contain a NUL byte');
const lineArg = z.number().int().min(1);

export const READ_CONTAINER_FILE = defineActionSpec({
  name: 'readContainerFile',
  description: 'Read lines of a text file inside a container started with startContainer.',
  returns: '{ path, startLine, endLine, totalLines, totalBytes, text } with numbered lines (binary files described, not shown)',
  note: 'Paths are relative to the working folder (/workspace) or absolute inside it.',
  args: z.object({
    containerId: containerIdArg.describe('id or name returned by startContainer'),
    path: pathArg.describe('file path: relative to the working folder, or absolute inside it'),
    startLine: lineArg.optional().describe('first line to read (1-based; default 1)'),
    endLine: lineArg.optional().describe('last line to read (inclusive)'),
  }),
  configNotes: (config) => ({
    endLine: `last line to read (inclusive); at most ${config.files.maxReadLines} lines and ${config.files.maxReadBytes} bytes a read`,
  }),
});

export const WRITE_CONTAINER_FILE = defineActionSpec({
  name: 'writeContainerFile',
  description: 'Write a file inside a container started with startContainer (parent folders created; the content exactly as given).',
  returns: '{ path, bytesWritten, created }',
  args: z.object({
    containerId: containerIdArg.describe('id or name returned by startContainer'),
    path: pathArg.describe('file path: relative to the working folder, or absolute inside it'),
    content: z.string().describe('the whole new content of the file'),
  }),
});

export const LIST_CONTAINER_DIRECTORY = defineActionSpec({
  name: 'listContainerDirectory',
  description: 'List a folder inside a container started with startContainer.',
  returns: '{ path, entries: [{ path, type, size? }], note? }',
  args: z.object({
    containerId: containerIdArg.describe('id or name returned by startContainer'),
    path: pathArg.optional().describe('folder: relative to the working folder, or absolute inside it (default: the working folder)'),
    depth: z.number().int().min(1).optional().describe('how many levels deep (default 1)'),
  }),
  configNotes: (config) => ({ depth: `how many levels deep (default 1, at most ${config.files.maxListDepth})` }),
});

export const EDIT_CONTAINER_FILE = defineActionSpec({
  name: 'editContainerFile',
  description:
    'Change a text file inside a container started with startContainer by replacing exactly one occurrence of oldText with newText.',
  returns: '{ path, bytesWritten }; an error saying how many occurrences there were when not exactly one',
  note: 'The cheapest way to change a file in place: give enough of oldText for it to occur once.',
  args: z.object({
    containerId: containerIdArg.describe('id or name returned by startContainer'),
    path: pathArg.describe('file path: relative to the working folder, or absolute inside it'),
    oldText: z.string().min(1, 'oldText is required').describe('the exact text to replace (whitespace included); must occur exactly once'),
    newText: z.string().describe('the text to put in its place'),
  }),
});
