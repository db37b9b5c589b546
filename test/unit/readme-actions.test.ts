import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ERROR_CODES } from '../../src/errors.js';
import { argumentList } from '../../src/function-def.js';
import { CODE_EXECUTE } from '../../src/actions/code-spec.js';
import { RUN_COMMAND, START_CONTAINER, STOP_CONTAINER } from '../../src/actions/container-specs.js';
import { EDIT_CONTAINER_FILE, LIST_CONTAINER_DIRECTORY, READ_CONTAINER_FILE, WRITE_CONTAINER_FILE } from '../../src/actions/file-specs.js';
import { RUN_CONTAINER_TASK } from '../../src/actions/task-spec.js';
import { PROCESS_SPECS } from '../../src/actions/process-specs.js';

/** The README's front page: the actions table and the error list are checked against the code. */
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const SPECS = [
  START_CONTAINER,
  RUN_COMMAND,
  STOP_CONTAINER,
  RUN_CONTAINER_TASK,
  READ_CONTAINER_FILE,
  WRITE_CONTAINER_FILE,
  LIST_CONTAINER_DIRECTORY,
  EDIT_CONTAINER_FILE,
  CODE_EXECUTE,
  ...PROCESS_SPECS,
];

test.each(SPECS.map((s) => [s.name, s] as const))('plugin:%s: its row names exactly the arguments its schema takes', (name, spec) => {
  const row = README.split('\n').find((line) => line.startsWith(`| \`plugin:${name}\` |`));
  expect(row).toBeDefined();
  const argsCell = row!.split(/(?<!\\)\|/)[2] ?? '';
  const documented = [...argsCell.matchAll(/`([A-Za-z]+\??)`/g)].map((m) => m[1]).join(', ');
  expect(documented).toBe(argumentList(spec.args));
});

test('the actions table has a row for every action and no other', () => {
  const rows = README.split('\n').filter((line) => /^\| `plugin:/.test(line));
  expect(rows.map((r) => /^\| `plugin:([A-Za-z]+)`/.exec(r)![1]).sort()).toEqual(SPECS.map((s) => s.name).sort());
});

test('the error list names every code of ERROR_CODES, in order, and no other', () => {
  const listed = [...README.matchAll(/^- `([A-Z_]+)`: /gm)].map((m) => m[1]);
  expect(listed).toEqual(Object.keys(ERROR_CODES));
});

test("every page the front page links to exists, and every table row has its header's cell count", () => {
  for (const [, target] of README.matchAll(/\]\(((?:docs|bench)\/[^)#]+)(?:#[^)]*)?\)/g))
    expect(existsSync(join(ROOT, target!))).toBe(true);
  for (const page of [
    'README.md',
    ...['actions', 'configuration', 'security', 'lifecycle', 'hosts', 'cli', 'benchmarks'].map((p) => `docs/${p}.md`),
  ]) {
    const lines = readFileSync(join(ROOT, page), 'utf8').split('\n');
    let columns = 0;
    lines.forEach((line, i) => {
      if (!line.startsWith('|')) return void (columns = 0);
      const cells = line.split(/(?<!\\)\|/).length - 2;
      if (columns === 0) {
        columns = cells;
        // A table renders only with its separator row right under the header.
        expect(`${page}:${i + 2}: ${/^\| *:?-+/.test(lines[i + 1] ?? '') ? 'separator' : 'no separator'}`).toBe(
          `${page}:${i + 2}: separator`,
        );
      } else expect(`${page}:${i + 1}: ${cells} cells`).toBe(`${page}:${i + 1}: ${columns} cells`);
    });
  }
});

test('the front page stays a front page', () => {
  expect(Buffer.byteLength(README)).toBeLessThan(15 * 1024);
});
