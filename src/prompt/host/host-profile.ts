import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, parse } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * Which GenAIcode loaded the plugin, and how it is called. Two coding-agent releases exist:
 * 0.9.5 (npm) and the 1.x line (built from source). They differ in how a model is called
 * (`convention`), in the name of the dispatcher's function (`dispatcher`), in where the
 * built-in handler table lives, and in their model tiers. Everything that differs is
 * decided here, once, when the plugin loads; the rest of the plugin asks this profile.
 */
export interface HostProfile {
  /** For people: 'GenAIcode 0.9.5', 'GenAIcode 1.0.1', or 'no GenAIcode'. */
  readonly name: string;
  /**
   * How `generateContentFn` is called. `positional`: 0.9.5's `(prompt, functionDefs,
   * requiredFunctionName, temperature, modelType, options)`, answering function calls;
   * `config`: 0.10 and later, `(prompt, { modelType, temperature, functionDefs, ... }, options)`,
   * answering parts (`{ type: 'functionCall', functionCall }`, `{ type: 'text', text }`).
   */
  readonly convention: 'positional' | 'config';
  /** The function through which the model picks an action: `askQuestion` (0.9.5) or `iterate` (1.x). */
  readonly dispatcher: 'askQuestion' | 'iterate';
  /** The host's model tiers. `lite` is the cheapest the host has (`cheap` where it has no LITE). */
  readonly tiers: { readonly lite: string; readonly cheap: string; readonly default: string };
  /** The host has a built-in `runContainerTask` action of its own (1.x), which the model sees beside ours. */
  readonly builtinContainerTask: boolean;
  /**
   * The host shows the user an action's result line even when the user interrupted the
   * step (0.9.5 does; 1.x drops the result and says only "Iteration aborted.").
   */
  readonly showsResultAfterAbort: boolean;
  /**
   * The URL of one of the host's own modules (`main/config.js`), the very instance the host
   * runs; undefined outside a host. Importing `genaicode/...` by name would find whatever
   * `genaicode` lies beside the plugin, which need not be the one that loaded it.
   */
  moduleUrl(path: string): string | undefined;
  /** The host's built-in handler table and the loop module that fills it, where this host has them. */
  readonly handlerTable?: { readonly loop: string; readonly table: string };
  /** A `genaicode` that is not a coding agent (npm's 2.x toolkit): it loads no plugins. */
  readonly notAnAgent?: boolean;
}

const TABLES = {
  askQuestion: {
    loop: 'prompt/steps/step-ask-question/step-ask-question.js',
    table: 'prompt/steps/step-ask-question/step-ask-question-handlers.js',
  },
  iterate: {
    loop: 'prompt/steps/step-iterate/step-iterate.js',
    table: 'prompt/steps/step-iterate/step-iterate-handlers.js',
  },
} as const;

/** A host found on disk: its package folder (real path), version, and where its modules are. */
export interface HostPackage {
  root: string;
  version: string | undefined;
  /** `dist` for a built package; `src` when it runs its TypeScript sources (a 1.x checkout in development mode). */
  layout: 'dist' | 'src';
}

function readPackage(dir: string): { name?: unknown; version?: unknown } | undefined {
  try {
    return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf-8')) as { name?: unknown; version?: unknown };
  } catch {
    return undefined;
  }
}

/** The folder of the `genaicode` package that contains `file`, walking up; undefined when none does. */
function packageContaining(file: string): string | undefined {
  let dir = dirname(file);
  for (;;) {
    if (readPackage(dir)?.name === 'genaicode') return dir;
    const up = dirname(dir);
    if (up === dir || dir === parse(dir).root) return undefined;
    dir = up;
  }
}

/** The `genaicode` package Node would find from `dir` (node_modules up the tree), by its package.json. */
function packageFrom(dir: string): string | undefined {
  try {
    // 'genaicode/package.json' is not exported by every version: resolve the main entry instead.
    return packageContaining(createRequire(join(dir, 'noop.js')).resolve('genaicode'));
  } catch {
    let d = dir;
    for (;;) {
      const candidate = join(d, 'node_modules', 'genaicode');
      if (readPackage(candidate)?.name === 'genaicode') return candidate;
      const up = dirname(d);
      if (up === d) return undefined;
      d = up;
    }
  }
}

export interface LocateOptions {
  /** The script the process runs (`process.argv[1]`): GenAIcode's own `bin/genaicode.cjs` when it was started as `genaicode`. */
  script?: string;
  /** Where the plugin's own files are (the `genaicode` beside them). */
  pluginDir?: string;
  /** The project folder (a `genaicode` installed in it). */
  cwd?: string;
  /** The process's arguments after the script (`--force-dist` keeps a checkout on its built files). */
  args?: readonly string[];
}

/**
 * Finds the GenAIcode that runs this process, in order: the package whose `bin` the process
 * was started from (a global or linked `genaicode`, or a checkout); then the one beside the
 * plugin; then the project's. The first is the host itself whenever GenAIcode was started
 * by its own command, whichever other copies lie around.
 */
export function locateHost(o: LocateOptions = {}): HostPackage | undefined {
  const candidates: Array<() => string | undefined> = [
    () => (o.script ? packageContaining(realpathSync(o.script)) : undefined),
    () => (o.pluginDir ? packageFrom(o.pluginDir) : undefined),
    () => (o.cwd ? packageFrom(o.cwd) : undefined),
  ];
  for (const candidate of candidates) {
    let root: string | undefined;
    try {
      root = candidate();
    } catch {
      root = undefined; // a script path that is gone, or unreadable: try the next place
    }
    if (!root) continue;
    root = realpathSync(root);
    const version = readPackage(root)?.version;
    // bin/genaicode.cjs runs a checkout's TypeScript sources (through ts-node) when src/ is
    // there, unless --force-dist: the host's modules are then src/**/*.ts.
    const sourceRun =
      o.script !== undefined &&
      existsSync(join(root, 'src', 'main', 'codegen.ts')) &&
      !(o.args ?? []).includes('--force-dist') &&
      realpathSync(o.script).startsWith(join(root, 'bin'));
    return { root, version: typeof version === 'string' ? version : undefined, layout: sourceRun ? 'src' : 'dist' };
  }
  return undefined;
}

function versionParts(version: string | undefined): [number, number] | undefined {
  const m = /^(\d+)\.(\d+)\./.exec(version ?? '');
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}

/**
 * The profile of a located host. By its version where it has one (0.10.0 changed how a
 * model is called; the 1.x line renamed the dispatcher and moved the handler table; 2.x is
 * not a coding agent); otherwise by which handler table its files have.
 */
export function hostProfile(pkg: HostPackage | undefined): HostProfile {
  if (!pkg) return NO_HOST;
  const file = (path: string) => join(pkg.root, pkg.layout, pkg.layout === 'src' ? path.replace(/\.js$/, '.ts') : path);
  const v = versionParts(pkg.version);
  const iterate = existsSync(file(TABLES.iterate.table)) || (v !== undefined && v[0] >= 1);
  const config = v ? v[0] >= 1 || v[1] >= 10 : iterate;
  return {
    name: `GenAIcode ${pkg.version ?? '(version unknown)'}`,
    convention: config ? 'config' : 'positional',
    dispatcher: iterate ? 'iterate' : 'askQuestion',
    // 1.x's ModelType is DEFAULT | CHEAP | LITE; 0.9.5's DEFAULT | CHEAP | REASONING.
    tiers: { lite: config ? 'lite' : 'cheap', cheap: 'cheap', default: 'default' },
    showsResultAfterAbort: !iterate,
    builtinContainerTask: existsSync(file('prompt/steps/step-iterate/handlers/handle-run-container-task.js')),
    moduleUrl: (path) => pathToFileURL(file(path)).href,
    handlerTable: iterate ? TABLES.iterate : TABLES.askQuestion,
    ...(v && v[0] >= 2 ? { notAnAgent: true } : {}),
  };
}

/** Outside GenAIcode (the library, the CLI, unit tests): nothing to import, 0.9.5's calling convention. */
export const NO_HOST: HostProfile = {
  name: 'no GenAIcode',
  convention: 'positional',
  dispatcher: 'askQuestion',
  tiers: { lite: 'cheap', cheap: 'cheap', default: 'default' },
  builtinContainerTask: false,
  showsResultAfterAbort: true,
  moduleUrl: () => undefined,
};

let running: HostProfile | undefined;

/** The profile of the GenAIcode running this process, found once. */
export function runningHost(): HostProfile {
  running ??= hostProfile(
    locateHost({
      ...(process.argv[1] ? { script: process.argv[1] } : {}),
      pluginDir: dirname(fileURLToPath(import.meta.url)),
      cwd: process.cwd(),
      args: process.argv.slice(2),
    }),
  );
  return running;
}
