import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { argumentList } from '../../src/function-def.js';
import { RUN_COMMAND, START_CONTAINER, STOP_CONTAINER } from '../../src/actions/container-specs.js';
import { RUN_CONTAINER_TASK } from '../../src/actions/task-spec.js';

/** The README's table of actions names exactly the arguments each action's schema takes. */
const README = readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'README.md'), 'utf8');

test.each([START_CONTAINER, RUN_COMMAND, STOP_CONTAINER, RUN_CONTAINER_TASK].map((s) => [s.name, s] as const))(
  'plugin:%s',
  (name, spec) => {
    const row = README.split('\n').find((line) => line.startsWith(`| \`plugin:${name}\` |`));
    expect(row).toBeDefined();
    const argsCell = row!.split('|')[2] ?? '';
    const documented = [...argsCell.matchAll(/`([A-Za-z]+\??)`/g)].map((m) => m[1]).join(', ');
    expect(documented).toBe(argumentList(spec.args));
  },
);
