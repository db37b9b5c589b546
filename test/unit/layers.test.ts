import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The layers of src/ (docs/ARCHITECTURE.md), lowest first. A module may import its own
 * layer and the ones below it, never one above: that keeps the shape the next features
 * copy. A file not listed here fails the test, so a new folder gets a place on purpose.
 */
const LAYERS: Array<{ name: string; holds: (path: string) => boolean }> = [
  {
    name: 'foundation',
    holds: (p) => ['errors.ts', 'display-text.ts', 'version.ts', 'function-def.ts', 'debug.ts', 'paths.ts', 'retry.ts'].includes(p),
  },
  { name: 'policy', holds: (p) => p.startsWith('policy/') },
  { name: 'config', holds: (p) => p.startsWith('config/') },
  { name: 'engine', holds: (p) => p.startsWith('engine/') },
  { name: 'capture', holds: (p) => p.startsWith('capture/') },
  { name: 'images', holds: (p) => p.startsWith('images/') },
  { name: 'host project', holds: (p) => p.startsWith('project/') },
  { name: 'commands', holds: (p) => p.startsWith('commands/') },
  { name: 'processes', holds: (p) => p.startsWith('processes/') },
  { name: 'files', holds: (p) => p.startsWith('files/') },
  { name: 'sandbox', holds: (p) => p.startsWith('sandbox/') },
  { name: 'answer', holds: (p) => p.startsWith('answer/') },
  { name: 'task', holds: (p) => p.startsWith('task/') },
  { name: 'code', holds: (p) => p.startsWith('code/') },
  { name: 'actions', holds: (p) => p.startsWith('actions/') },
  { name: 'mcp server', holds: (p) => p.startsWith('mcp/') },
  { name: 'genaicode adapter', holds: (p) => p.startsWith('prompt/') },
  { name: 'entry points', holds: (p) => p.startsWith('cli/') || p === 'plugin.ts' || p === 'index.ts' },
];

const SRC = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src');

function sources(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

function layerOf(path: string): number {
  const rel = relative(SRC, path).split('\\').join('/');
  const i = LAYERS.findIndex((l) => l.holds(rel));
  if (i === -1) throw new Error(`src/${rel} belongs to no layer: give it one in test/unit/layers.test.ts and docs/ARCHITECTURE.md`);
  return i;
}

/** Relative imports of a file (static, dynamic and type-only), as absolute .ts paths. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)].map((m) => m[1]!);
  return specs.map((s) => normalize(join(dirname(file), s.replace(/\.js$/, '.ts'))));
}

test('every import in src/ points to its own layer or a lower one', () => {
  const upward: string[] = [];
  for (const file of sources()) {
    for (const target of importsOf(file)) {
      if (layerOf(target) > layerOf(file)) {
        upward.push(
          `src/${relative(SRC, file)} (${LAYERS[layerOf(file)]!.name}) imports src/${relative(SRC, target)} (${LAYERS[layerOf(target)]!.name})`,
        );
      }
    }
  }
  expect(upward).toEqual([]);
});

test('dockerode is imported only by the engine adapter, client-node only by the Kubernetes one; GenAIcode only by the adapter layer', () => {
  const misplaced: string[] = [];
  for (const file of sources()) {
    const rel = relative(SRC, file);
    const text = readFileSync(file, 'utf8');
    if (/from 'dockerode'|from 'docker-modem/.test(text) && !rel.startsWith('engine/')) misplaced.push(`${rel} imports dockerode`);
    if (/from '@kubernetes\/client-node'|from 'ws'/.test(text) && !rel.startsWith('engine/kubernetes/'))
      misplaced.push(`${rel} imports client-node`);
    if (/(?:from|import)\s*\(?\s*'genaicode(?:\/[^']*)?'/.test(text) && !rel.startsWith('prompt/'))
      misplaced.push(`${rel} imports genaicode`);
  }
  expect(misplaced).toEqual([]);
});

test('the two hosts stand side by side: the MCP server never imports the GenAIcode adapter, nor it the server', () => {
  const crossing: string[] = [];
  for (const file of sources()) {
    const rel = relative(SRC, file).split('\\').join('/');
    const side = rel.startsWith('mcp/') ? 'prompt/' : rel.startsWith('prompt/') ? 'mcp/' : undefined;
    if (!side) continue;
    for (const target of importsOf(file))
      if (relative(SRC, target).split('\\').join('/').startsWith(side)) crossing.push(`src/${rel} imports src/${relative(SRC, target)}`);
  }
  expect(crossing).toEqual([]);
});

test('no circle of imports, not even within a layer (type-only imports count: they tie the files together too)', () => {
  const graph = new Map(sources().map((f) => [f, importsOf(f)]));
  const circles: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const visit = (file: string, path: string[]): void => {
    if (state.get(file) === 'done') return;
    if (state.get(file) === 'open') {
      circles.push([...path.slice(path.indexOf(file)), file].map((f) => relative(SRC, f)).join(' -> '));
      return;
    }
    state.set(file, 'open');
    for (const next of graph.get(file) ?? []) visit(next, [...path, file]);
    state.set(file, 'done');
  };
  for (const file of graph.keys()) visit(file, []);
  expect(circles).toEqual([]);
});

test('no source file is much over 400 lines: past that, split it by meaning (docs/ARCHITECTURE.md)', () => {
  const long = sources()
    .map((f) => ({ file: relative(SRC, f), lines: readFileSync(f, 'utf8').split('\n').length }))
    .filter((x) => x.lines > 410)
    .map((x) => `src/${x.file}: ${x.lines} lines`);
  expect(long).toEqual([]);
});
