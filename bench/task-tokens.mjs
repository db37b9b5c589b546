#!/usr/bin/env node
/**
 * Token benchmark of the runContainerTask inner loop: are the
 * cheap model's step requests bounded once the history is long?
 *
 * Runs the real `runTask` (dist/task/task-loop.js) in a real sandbox (the python image,
 * network none) with a scripted TaskModel over a 25-step task: 24 real commands with
 * realistic output (a pip-style install log, `ls -la` listings, a unittest run with two
 * failures, `cat` of a source file, failing commands, a long progress log, archives), then
 * taskComplete. Every step request is measured twice: `result.stepPromptChars` (what the
 * loop reports) and what the GenAIcode adapter would send (system prompt + prompt text,
 * as the model port receives them). Tokens are estimated as characters / 4.
 *
 * Target: after step 5 the step requests do not grow by more than 10% over the task:
 *   max(tokens of steps 6..N) <= 1.10 x tokens of step 5.
 *
 * The sandbox has no pip (offline image): a pip look-alike is installed in the container
 * before the task starts (not a task step); it prints pip's install log format and writes
 * package folders under .venv/, so later listings show them.
 *
 *   node bench/task-tokens.mjs [--quick] [--json] [--keep-log=<file>]
 *   import { benchTaskTokens } from './task-tokens.mjs';
 *   const { rows, pass, ratio } = await benchTaskTokens({ quick: false });
 *
 * `quick` runs the first 14 commands (15 step requests) and checks steps 6..15 instead.
 * Requires the build (`npx tsc -p tsconfig.build.json`) and a Docker engine with
 * genaicode-docker/sandbox-python:latest (`bash scripts/setup.sh`).
 */
import { copyFileSync, existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const DIST = new URL('../dist/', import.meta.url);
const IMAGE = 'genaicode-docker/sandbox-python:latest';
const TARGET_RATIO = 1.1;
const BASE_STEP = 5;
const CHARS_PER_TOKEN = 4;

// ---------------------------------------------------------------------------------------
// The task

const TASK_DESCRIPTION =
  'Set up the calc project in /workspace: install the requirements (requests, flask, pytest, numpy), ' +
  'write the calc package (add, subtract, multiply, divide, mean, percent) and its unittest suite, ' +
  'run the tests until they pass, add a command-line entry point with a benchmark mode, ' +
  'and package everything as /tmp/app.tgz.';

/** The pip look-alike (python3): pip 23's output format, deterministic sizes, no network. */
const FAKE_PIP = String.raw`#!/usr/bin/env python3
import hashlib, os, sys
CATALOG = {
    "requests": ("2.31.0", ["charset-normalizer<4,>=2", "idna<4,>=2.5", "urllib3<3,>=1.21.1", "certifi>=2017.4.17"]),
    "flask": ("3.0.0", ["Werkzeug>=3.0.0", "Jinja2>=3.1.2", "itsdangerous>=2.1.2", "click>=8.1.3", "blinker>=1.6.2"]),
    "pytest": ("7.4.3", ["iniconfig", "packaging", "pluggy<2.0,>=0.12"]),
    "numpy": ("1.26.2", []),
    "charset-normalizer": ("3.3.2", []), "idna": ("3.6", []), "urllib3": ("2.1.0", []),
    "certifi": ("2023.11.17", []), "werkzeug": ("3.0.1", ["MarkupSafe>=2.1.1"]),
    "jinja2": ("3.1.2", ["MarkupSafe>=2.0"]), "itsdangerous": ("2.1.2", []), "click": ("8.1.7", []),
    "blinker": ("1.7.0", []), "markupsafe": ("2.1.3", []), "iniconfig": ("2.0.0", []),
    "packaging": ("23.2", []), "pluggy": ("1.3.0", []),
}
NATIVE = {"numpy", "charset-normalizer", "markupsafe"}
def name_of(spec):
    for sep in "<>=!~;[ ":
        spec = spec.split(sep)[0]
    return spec.strip()
def size_kb(name):
    h = int(hashlib.sha1(name.encode()).hexdigest(), 16)
    return 18432.0 if name == "numpy" else round(20 + h % 380 + (h % 10) / 10, 1)
def wheel(name, ver):
    tag = "cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64" if name in NATIVE else "py3-none-any"
    return "%s-%s-%s.whl" % (name.replace("-", "_"), ver, tag)
def human(kb):
    return "%.1f MB" % (kb / 1024) if kb >= 1024 else "%.1f kB" % kb
def bar(kb):
    done = "%.1f/%.1f %s" % ((kb / 1024, kb / 1024, "MB") if kb >= 1024 else (kb, kb, "kB"))
    return "   " + "\u2501" * 40 + " " + done + " " + ("9.8 MB/s" if kb >= 1024 else "1.9 MB/s") + " eta 0:00:00"
args = sys.argv[1:]
if not args or args[0] != "install":
    print("Usage:\n  pip <command> [options]\n\nCommands:\n  install    Install packages.", file=sys.stderr); sys.exit(1)
reqs = []
i = 1
while i < len(args):
    if args[i] == "-r":
        with open(args[i + 1]) as f:
            reqs += [(l.strip(), "-r %s (line %d)" % (args[i + 1], n + 1)) for n, l in enumerate(f) if l.strip() and not l.startswith("#")]
        i += 2
    else:
        reqs.append((args[i], None)); i += 1
site = os.path.join(os.getcwd(), ".venv", "lib", "python3.11", "site-packages")
order, seen, downloads = [], set(), []
def collect(spec, origin):
    name = name_of(spec).lower()
    if name not in CATALOG:
        print("ERROR: Could not find a version that satisfies the requirement %s (from versions: none)" % spec, file=sys.stderr)
        print("ERROR: No matching distribution found for %s" % name_of(spec), file=sys.stderr)
        sys.exit(1)
    if name in seen:
        return
    seen.add(name)
    ver, deps = CATALOG[name]
    print("Collecting %s%s" % (spec, " (from %s)" % origin if origin else ""))
    print("  Downloading %s.metadata (%.1f kB)" % (wheel(name, ver), 2 + size_kb(name) % 7))
    downloads.append((name, ver))
    for d in deps:
        collect(d, "%s==%s->%s" % (name, ver, origin) if origin else "%s==%s" % (name, ver))
    order.append((name, ver))
for spec, origin in reqs:
    collect(spec, origin)
for name, ver in downloads:
    print("Downloading %s (%s)" % (wheel(name, ver), human(size_kb(name))))
    print(bar(size_kb(name)))
print("Installing collected packages: " + ", ".join(n for n, _ in order))
for name, ver in order:
    pkg = os.path.join(site, name.replace("-", "_"))
    info = os.path.join(site, "%s-%s.dist-info" % (name.replace("-", "_"), ver))
    os.makedirs(pkg, exist_ok=True); os.makedirs(info, exist_ok=True)
    open(os.path.join(pkg, "__init__.py"), "w").write('__version__ = "%s"\n' % ver)
    open(os.path.join(info, "METADATA"), "w").write("Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, ver))
    open(os.path.join(info, "RECORD"), "w").write("%s/__init__.py,,\n" % name.replace("-", "_"))
print("Successfully installed " + " ".join("%s-%s" % (n, v) for n, v in order))
`;

const OPS_PY = `"""Arithmetic operations of the calc package."""
from __future__ import annotations

from typing import Iterable

__all__ = ["add", "subtract", "multiply", "divide", "mean", "percent"]


def add(a: float, b: float) -> float:
    """Return a + b."""
    return a + b


def subtract(a: float, b: float) -> float:
    """Return a - b."""
    return a - b


def multiply(a: float, b: float) -> float:
    """Return a * b."""
    return a * b


def divide(a: float, b: float) -> float:
    """Return a / b; ZeroDivisionError when b is 0."""
    if b == 0:
        raise ZeroDivisionError("division by zero")
    return a // b


def mean(values: Iterable[float]) -> float:
    """Arithmetic mean; ValueError for no values."""
    items = list(values)
    if not items:
        raise ValueError("mean() of no values")
    return divide(sum(items), len(items))


def percent(part: float, whole: float) -> float:
    """part as a percentage of whole."""
    return multiply(100, divide(part, whole))`;

const TEST_PY = `import unittest

from calc.ops import add, divide, mean, multiply, percent, subtract


class OpsTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_subtract(self):
        self.assertEqual(subtract(10, 4), 6)

    def test_multiply(self):
        self.assertEqual(multiply(6, 7), 42)

    def test_divide(self):
        self.assertEqual(divide(7, 2), 3.5)

    def test_divide_by_zero(self):
        with self.assertRaises(ZeroDivisionError):
            divide(1, 0)

    def test_mean(self):
        self.assertAlmostEqual(mean([1, 2, 3, 4]), 2.5)

    def test_mean_empty(self):
        with self.assertRaises(ValueError):
            mean([])

    def test_percent(self):
        self.assertAlmostEqual(percent(1, 8), 12.5)


if __name__ == "__main__":
    unittest.main()`;

const MAIN_PY = `"""python3 -m calc A OP B | --benchmark N"""
import sys
import time

from calc.ops import add, divide, multiply, subtract

OPS = {"+": add, "-": subtract, "x": multiply, "/": divide}


def benchmark(n: int) -> None:
    started = time.perf_counter()
    for i in range(1, n + 1):
        op = "+-x/"[i % 4]
        t = time.perf_counter()
        value = OPS[op](i * 7, (i % 13) + 1)
        print(f"[{i:04d}/{n}] {i * 7:>6} {op} {(i % 13) + 1:>2} = {value:>12.4f}  ok  {(time.perf_counter() - t) * 1e6:7.2f} us")
    print(f"benchmark: {n} operations in {time.perf_counter() - started:.3f} s")


def main(argv: list[str]) -> int:
    if argv[:1] == ["--benchmark"]:
        benchmark(int(argv[1]) if len(argv) > 1 else 200)
        return 0
    if len(argv) != 3 or argv[1] not in OPS:
        print("usage: python3 -m calc A OP B   (OP: + - x /)", file=sys.stderr)
        return 2
    a, op, b = float(argv[0]), argv[1], float(argv[2])
    print(f"{a:g} {op} {b:g} = {OPS[op](a, b):g}")
    return 0


sys.exit(main(sys.argv[1:]))`;

const heredoc = (path, content) => `cat > ${path} <<'EOF'\n${content}\nEOF`;

/**
 * The task's commands in order, each with the exit code it must have (a sanity check that
 * the benchmark measured what it means to: real commands, real failures).
 */
export const TASK_COMMANDS = [
  { command: 'ls -la', exit: 0 },
  { command: 'python3 --version && cat /etc/os-release', exit: 0 },
  {
    command: "printf 'requests==2.31.0\\nflask==3.0.0\\npytest==7.4.3\\nnumpy==1.26.2\\n' > requirements.txt && cat requirements.txt",
    exit: 0,
  },
  { command: 'pip install -r requirements.txt', exit: 0 },
  { command: 'pip install leftpad-py==9.9.9', exit: 1 },
  { command: 'ls -la .venv/lib/python3.11/site-packages', exit: 0 },
  { command: `mkdir -p calc tests && touch calc/__init__.py && ${heredoc('calc/ops.py', OPS_PY)}`, exit: 0 },
  { command: heredoc('tests/test_ops.py', TEST_PY), exit: 0 },
  { command: 'cat calc/ops.py', exit: 0 },
  { command: 'python3 -m unittest discover -s tests -v', exit: 1 },
  { command: "sed -i 's|return a // b|return a / b|' calc/ops.py && grep -n -A 5 'def divide' calc/ops.py", exit: 0 },
  { command: 'python3 -m unittest discover -s tests -v', exit: 0 },
  { command: 'python3 -m pytest -q tests', exit: 1 },
  { command: 'ls -la calc tests', exit: 0 },
  { command: 'python3 -m compileall calc tests', exit: 0 },
  { command: 'find . -path ./.venv -prune -o -type f -print | sort', exit: 0 },
  { command: 'wc -l calc/*.py tests/*.py requirements.txt', exit: 0 },
  { command: heredoc('calc/__main__.py', MAIN_PY), exit: 0 },
  { command: 'python3 -m calc 12 / 5 && python3 -m calc 6 x 7', exit: 0 },
  { command: 'python3 -m calc 1 % 2', exit: 2 },
  { command: 'python3 -m calc --benchmark 300', exit: 0 },
  { command: 'du -ah . | sort -h | tail -25', exit: 0 },
  { command: 'tar czf /tmp/app.tgz calc tests requirements.txt && ls -la /tmp', exit: 0 },
  { command: 'tar tzvf /tmp/app.tgz', exit: 0 },
];

const QUICK_COMMANDS = 14;

// ---------------------------------------------------------------------------------------

async function loadDist() {
  const index = new URL('index.js', DIST);
  const loop = new URL('task/task-loop.js', DIST);
  if (!existsSync(fileURLToPath(index)) || !existsSync(fileURLToPath(loop))) {
    throw new Error('dist/ is missing: build first with `npx tsc -p tsconfig.build.json`.');
  }
  const [lib, taskLoop] = await Promise.all([import(index.href), import(loop.href)]);
  return { lib, taskLoop };
}

/**
 * Runs the benchmark.
 * @param {{ quick?: boolean, keepLog?: string }} [options] keepLog: copy the task log there (the temp dir is removed)
 * @returns {Promise<{ rows: Array<{ step: number, action: string, command?: string, exitCode?: number,
 *   outputBytes?: number, stepPromptChars: number, adapterChars: number, functionChars: number, tokens: number }>,
 *   pass: boolean, ratio: number, target: number, baseStep: number, baseTokens: number, maxAfterBase: { step: number, tokens: number },
 *   steps: number, success: boolean, endReason: string, consistent: boolean, problems: string[], durationMs: number }>}
 */
export async function benchTaskTokens({ quick = false, keepLog } = {}) {
  const startedAt = performance.now();
  const { lib, taskLoop } = await loadDist();
  const commands = quick ? TASK_COMMANDS.slice(0, QUICK_COMMANDS) : TASK_COMMANDS;
  const dir = mkdtempSync(join(tmpdir(), 'gcd-bench-tokens-'));
  const config = lib.loadConfig({
    cwd: dir,
    env: {},
    overrides: { network: 'none', task: { network: 'none' }, images: { pull: false } },
  });
  const manager = new lib.SandboxManager({ config, sweepOnStart: false });
  /** What the model port received for each step request. */
  const requests = [];
  const problems = [];
  try {
    const sandbox = await manager.start({ image: IMAGE, network: 'none' });
    const setup = await sandbox.exec(`cat > /usr/local/bin/pip <<'PIPEOF'\n${FAKE_PIP}\nPIPEOF\nchmod +x /usr/local/bin/pip`, {
      label: 'setup-pip',
    });
    if (setup.exitCode !== 0) throw new Error(`installing the pip look-alike failed (exit ${setup.exitCode}): ${setup.stderr}`);

    let stepCalls = 0;
    /** @type {import('../dist/task/task-model.js').TaskModel} */
    const model = {
      async call(tier, request) {
        if (tier === 'summary') {
          return [
            {
              name: 'taskSummary',
              args: {
                summary:
                  'Installed the requirements, wrote calc and its tests, fixed divide (// -> /), all 8 tests pass; packaged /tmp/app.tgz.',
              },
            },
          ];
        }
        stepCalls += 1;
        requests.push({
          system: request.system.length,
          prompt: request.prompt.length,
          functions: JSON.stringify(request.functions).length,
        });
        const next = commands[stepCalls - 1];
        if (next) return [{ name: 'nextCommand', args: { command: next.command } }];
        return [{ name: 'taskComplete', args: { summary: 'calc is installed, tested and packaged' } }];
      },
    };
    // The loop's sandbox, seen through a wrapper that records each command's output size.
    const outputBytes = [];
    const measured = Object.create(sandbox);
    measured.exec = async (command, options) => {
      const r = await sandbox.exec(command, options);
      outputBytes.push(r.bytes.stdout + r.bytes.stderr);
      return r;
    };
    const history = [];
    const result = await taskLoop.runTask({
      sandbox: measured,
      taskDescription: TASK_DESCRIPTION,
      model,
      limits: { maxCommands: config.task.maxCommands, budgetMs: config.task.budgetMs, commandTimeoutMs: config.exec.timeoutMs },
      log: manager.logs.create('task'),
      // The same line the runContainerTask handler gives the loop.
      environment: `image ${IMAGE}; working directory ${sandbox.info.workdir}; network none; /bin/sh; memory ${Math.round(sandbox.info.memoryBytes / 1024 ** 2)} MiB`,
      onProgress: (p) => {
        if (p.result && p.command !== undefined) history.push({ step: p.step, command: p.command, exitCode: p.result.exitCode });
      },
    });

    const rows = requests.map((r, i) => {
      const step = i + 1;
      const done = history.find((h) => h.step === step);
      const adapterChars = r.system + r.prompt;
      return {
        step,
        action: done ? 'nextCommand' : 'taskComplete',
        ...(done ? { command: done.command, exitCode: done.exitCode, outputBytes: outputBytes[step - 1] ?? NaN } : {}),
        stepPromptChars: result.stepPromptChars[i] ?? NaN,
        adapterChars,
        functionChars: r.functions,
        tokens: adapterChars / CHARS_PER_TOKEN,
      };
    });
    const consistent = rows.every((r) => r.stepPromptChars === r.adapterChars) && result.stepPromptChars.length === rows.length;
    if (!consistent)
      problems.push(
        `result.stepPromptChars (${result.stepPromptChars.join(',')}) differs from what the model port received (${rows.map((r) => r.adapterChars).join(',')})`,
      );
    for (const [i, c] of commands.entries()) {
      const h = history.find((x) => x.step === i + 1);
      if (!h) problems.push(`command ${i + 1} did not run: ${c.command.split('\n')[0]}`);
      else if (h.exitCode !== c.exit)
        problems.push(`command ${i + 1} exited ${h.exitCode}, expected ${c.exit}: ${c.command.split('\n')[0]}`);
    }
    if (!result.success) problems.push(`the task did not complete: ${result.endReason} (${result.reason})`);
    if (rows.length !== commands.length + 1) problems.push(`expected ${commands.length + 1} step requests, got ${rows.length}`);

    if (keepLog) copyFileSync(result.logPath, keepLog);
    const base = rows[BASE_STEP - 1];
    const after = rows.slice(BASE_STEP);
    if (!base || after.length === 0) throw new Error(`too few steps to check the target (${rows.length})`);
    const max = after.reduce((m, r) => (r.tokens > m.tokens ? r : m), after[0]);
    const ratio = max.tokens / base.tokens;
    const pass = ratio <= TARGET_RATIO && problems.length === 0;
    return {
      rows,
      pass,
      ratio,
      target: TARGET_RATIO,
      baseStep: BASE_STEP,
      baseTokens: base.tokens,
      maxAfterBase: { step: max.step, tokens: max.tokens },
      steps: rows.length,
      success: result.success,
      endReason: result.endReason,
      consistent,
      problems,
      durationMs: Math.round(performance.now() - startedAt),
    };
  } finally {
    await manager[Symbol.asyncDispose]();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The per-step table and the verdict, as printed when run directly. */
export function formatTaskTokens(r) {
  const lines = [];
  lines.push(`runContainerTask step requests: tokens ~ (system + prompt chars) / ${CHARS_PER_TOKEN}`);
  lines.push('step  tokens  chars  stepPromptChars  exit  output(B)  command');
  for (const row of r.rows) {
    const cmd = row.command === undefined ? '(taskComplete)' : row.command.split('\n')[0].slice(0, 60);
    lines.push(
      `${String(row.step).padStart(4)}  ${String(Math.round(row.tokens)).padStart(6)}  ${String(row.adapterChars).padStart(5)}  ${String(row.stepPromptChars).padStart(15)}  ${String(row.exitCode ?? '').padStart(4)}  ${String(row.outputBytes ?? '').padStart(9)}  ${cmd}`,
    );
  }
  lines.push(
    `(function definitions add ${r.rows[0]?.functionChars ?? 0} chars, ~${Math.round((r.rows[0]?.functionChars ?? 0) / CHARS_PER_TOKEN)} tokens, to every request, unchanged)`,
  );
  lines.push(
    `target: max over steps ${r.baseStep + 1}..${r.steps} <= ${r.target.toFixed(2)} x step ${r.baseStep}: ` +
      `step ${r.baseStep} = ${Math.round(r.baseTokens)} tokens, max = ${Math.round(r.maxAfterBase.tokens)} (step ${r.maxAfterBase.step}), ` +
      `ratio ${r.ratio.toFixed(3)} -> ${r.ratio <= r.target ? 'met' : 'NOT met'}`,
  );
  for (const p of r.problems) lines.push(`problem: ${p}`);
  lines.push(`${r.pass ? 'PASS' : 'FAIL'} (${r.steps} steps, task ${r.endReason}, ${(r.durationMs / 1000).toFixed(1)} s)`);
  return lines.join('\n');
}

function isMain() {
  if (!process.argv[1]) return false;
  try {
    return pathToFileURL(realpathSync(process.argv[1])).href === pathToFileURL(realpathSync(fileURLToPath(import.meta.url))).href;
  } catch {
    return false;
  }
}

if (isMain()) {
  const quick = process.argv.includes('--quick');
  const json = process.argv.includes('--json');
  const keepLog = process.argv.find((a) => a.startsWith('--keep-log='))?.slice('--keep-log='.length);
  try {
    const r = await benchTaskTokens({ quick, ...(keepLog ? { keepLog } : {}) });
    process.stdout.write(json ? `${JSON.stringify(r, null, 2)}\n` : `${formatTaskTokens(r)}\n`);
    process.exitCode = r.pass ? 0 : 1;
  } catch (e) {
    process.stderr.write(`task-tokens: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exitCode = 2;
  }
}
