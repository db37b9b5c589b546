// Runs GenAIcode 0.9.5's own file code in a project, as the host would after a container:
// its start-up source scan, its cache write, createFile and updateFile. Prints what each did.
// Usage: node genaicode-file-code.mjs <project> <file to update> <file to create>
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const [project, toUpdate, toCreate] = process.argv.slice(2);
process.chdir(project);
const dist = join(process.env.GENAICODE_DIST ?? '', '');
const result = {};
const step = async (name, fn) => {
  try {
    result[name] = { ok: true, value: await fn() };
  } catch (e) {
    result[name] = { ok: false, error: String(e?.message ?? e) };
  }
};
const { getSourceFiles } = await import(join(dist, 'files/find-files.js'));
const { writeCache } = await import(join(dist, 'files/cache-file.js'));
const update = await import(join(dist, 'operations/update-file/update-file-executor.js'));
const create = await import(join(dist, 'operations/create-file/create-file-executor.js'));
await step('scan', () => getSourceFiles().length);
await step('cache', () => writeCache('probe', 'value'));
await step('update', () => existsSync(toUpdate) && update.executor({ filePath: toUpdate, newContent: 'updated by genaicode\n' }));
await step('create', () =>
  create.executor({ filePath: toCreate, newContent: 'created by genaicode\n' }, { allowFileCreate: true, allowDirectoryCreate: true }),
);
process.stdout.write(JSON.stringify(result));
