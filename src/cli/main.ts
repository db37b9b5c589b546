#!/usr/bin/env node
import { type NetworkMode, NETWORK_MODES, PROJECT_MOUNTS, type ProjectMount } from '../policy/policy.js';
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { loadConfig } from '../config/load-config.js';
import { parseByteSize, type Config } from '../config/config-schema.js';
import { isSandboxError, SandboxError } from '../errors.js';
import { PACKAGE_VERSION } from '../version.js';
import { cleanup } from './cleanup.js';
import { code } from './code.js';
import { cp } from './cp.js';
import { CODE_LANGUAGES, type CodeLanguage } from '../code/code-executor.js';
import { demo } from './demo.js';
import { doctor } from './doctor.js';
import { run } from './run.js';
import { runBackground, superviseJob, SUPERVISOR_COMMAND } from './background.js';
import { logs } from './job-logs.js';
import { kill, ps } from './ps.js';
import { task, type TaskCliOptions } from './task.js';
import { images } from './images.js';
import { kubeTemplates } from './kube.js';
import { LANGUAGES, type Language } from '../config/languages.js';
import { displayLines, displayText } from '../display-text.js';
import { runMcpServer } from '../mcp/mcp-server.js';

// What the CLI prints quotes the config, the engine and models: control and invisible
// characters are shown by name (displayLines). Only `run` passes its command's own output
// through as it came, as `docker exec` does.
const out = (line: string) => process.stdout.write(`${displayLines(line)}\n`);
const err = (line: string) => process.stderr.write(`${displayLines(line)}\n`);
const commandOutput = (line: string) => process.stdout.write(`${line}\n`);

function config(cwd?: string): Config {
  return loadConfig(cwd === undefined ? {} : { cwd });
}

/** The project options of `run` and `task`, as the plugin's: the mount, and the folder (the current one by default). */
interface ProjectCliOptions {
  project?: ProjectMount;
  projectDir?: string;
}

const projectOption = () =>
  new Option(
    '--project <mount>',
    'mount the project at the working folder: none, ro, scratch (writes thrown away) or rw (changes applied, checked); at most project.mount',
  ).choices([...PROJECT_MOUNTS]);
const projectDirOption = () =>
  new Option('--project-dir <dir>', 'the project: this folder instead of the current one (mounted ro unless --project says otherwise)');

/** The configuration of the project, and the mount asked for: a project folder alone means read-only. */
function projectConfig(o: ProjectCliOptions): { config: Config; project?: ProjectMount } {
  if (o.projectDir !== undefined) {
    const dir = resolve(o.projectDir);
    let isDir = false;
    try {
      isDir = statSync(dir).isDirectory();
    } catch {
      // reported below
    }
    if (!isDir) throw new SandboxError('INVALID_ARGUMENT', `--project-dir ${JSON.stringify(o.projectDir)} is not a folder.`);
    return { config: config(dir), project: o.project ?? 'ro' };
  }
  return { config: config(), ...(o.project ? { project: o.project } : {}) };
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError(`expected a positive whole number, got ${JSON.stringify(value)}`);
  return n;
}

function nonNegativeInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`expected a whole number, got ${JSON.stringify(value)}`);
  return n;
}

function size(value: string): number {
  const n = parseByteSize(value);
  if (n === undefined) throw new InvalidArgumentError(`expected a size like 256m or 1g, got ${JSON.stringify(value)}`);
  return n;
}

const program = new Command()
  .name('genaicode-docker')
  .description('Run commands and tasks for a coding model in hardened, never-leaked Docker containers.')
  .version(PACKAGE_VERSION)
  .showHelpAfterError();

program
  .command('doctor')
  .description('check that sandboxes can run here: engine, images, limits in force')
  .option('--no-sandbox-check', 'skip starting a test sandbox')
  .action(async (o: { sandboxCheck: boolean }) => {
    process.exitCode = await doctor(config(), o, out);
  });

program
  .command('run')
  .description('run one command in a fresh sandbox, through the exact pipeline the model gets')
  .option('--image <image>', 'image (must be on the allowlist)')
  .addOption(new Option('--language <language>', "a language's image instead of --image").choices([...LANGUAGES]).conflicts('image'))
  .option('--timeout-ms <n>', 'kill the command after this many milliseconds', positiveInt)
  .addOption(new Option('--network <mode>', 'network of the sandbox').choices([...NETWORK_MODES]))
  .option('--memory <size>', 'memory limit, e.g. 256m', size)
  .addOption(projectOption())
  .addOption(projectDirOption())
  .option('--json', 'print the result object as one line of JSON (with --background: { id, container, logPath, pid })', false)
  .addOption(
    new Option(
      '--answer',
      'print the answer the model gets for the command as one line of JSON: the output, or a summary (extractive here: no model) with its key lines',
    ).conflicts(['json', 'background']),
  )
  .option('--background', 'start the command in a container of its own and return at once with a job id (see ps, logs, kill)', false)
  .argument('<cmd...>', 'command: one argument is a shell command line, several are run without a shell')
  .action(
    async (
      argv: string[],
      o: {
        image?: string;
        language?: Language;
        timeoutMs?: number;
        network?: NetworkMode;
        memory?: number;
        json: boolean;
        answer?: boolean;
        background: boolean;
      } & ProjectCliOptions,
    ) => {
      const { config: c, project } = projectConfig(o);
      const { projectDir: _dir, project: _mount, memory: _memory, background, ...rest } = o;
      const options = { ...rest, ...(o.memory !== undefined ? { memoryBytes: o.memory } : {}), ...(project ? { project } : {}) };
      process.exitCode = background
        ? await runBackground(c, o.projectDir !== undefined ? resolve(o.projectDir) : process.cwd(), argv, options, out, err)
        : await run(c, argv, options, commandOutput, err);
    },
  );

program
  .command('ps')
  .description('the background jobs (run --background) and the running containers of this user, with their state, age and expiry')
  .option('--all', 'ended jobs too', false)
  .option('--json', 'print the rows as one line of JSON', false)
  .action(async (o: { all: boolean; json: boolean }) => {
    process.exitCode = await ps(config(), o, out);
  });

program
  .command('logs')
  .description("print a background job's full log from disk")
  .argument('<id>', 'a job id (from run --background or ps)')
  .option('--follow', 'keep printing new output until the job ends', false)
  .option('--tail <n>', 'only the last n lines', positiveInt)
  .action(async (id: string, o: { follow: boolean; tail?: number }) => {
    // The command's own output, as it printed it (as `docker logs` does).
    process.exitCode = await logs(config(), id, o, (chunk) => process.stdout.write(chunk));
  });

program
  .command('kill')
  .description('stop a background job (its command and its container) or remove a running container of this user')
  .argument('<id>', 'a job id or a container name, from ps')
  .action(async (id: string) => {
    process.exitCode = await kill(config(), id, out, err);
  });

// The supervisor of one background job, started by `run --background` (never by a person).
program.command(SUPERVISOR_COMMAND, { hidden: true }).action(async () => {
  let code = 1;
  try {
    code = await superviseJob((cwd) => config(cwd));
  } catch (e) {
    err(isSandboxError(e) ? displayText(`${e.code}: ${e.message}`, 4000) : e instanceof Error ? (e.stack ?? e.message) : String(e));
  }
  // Ended, its container removed: nothing else may keep it alive (its IPC channel, a timer).
  process.exit(code);
});

program
  .command('code')
  .description('run a Python or bash snippet the way codeExecute does (code on stdin of the sandbox, never on a command line)')
  .addOption(new Option('--language <language>', 'python or bash').choices([...CODE_LANGUAGES]).makeOptionMandatory())
  .option('--one-shot', 'a fresh container for this snippet (the default keeps one alive; here it is removed at the end either way)', false)
  .option('--timeout-seconds <n>', 'kill the snippet after this many seconds', positiveInt)
  .option('--json', 'print the answer the model gets as one line of JSON', false)
  .argument('<code>', 'the program text, or - to read it from stdin')
  .action(async (source: string, o: { language: CodeLanguage; oneShot: boolean; timeoutSeconds?: number; json: boolean }) => {
    const text = source === '-' ? await readStdin() : source;
    process.exitCode = await code(config(), text, o, commandOutput, err);
  });

program
  .command('cp')
  .description('copy a file between the host and a running managed container: cp HOSTPATH NAME:PATH, or cp NAME:PATH HOSTPATH')
  .argument('<from>', 'a host path, or NAME:PATH (a path in the container, inside its working folder)')
  .argument('<to>', 'a host path, or NAME:PATH')
  .action(async (from: string, to: string) => {
    process.exitCode = await cp(config(), from, to, out, err);
  });

program
  .command('cleanup')
  .description("remove leaked containers: owner process gone, or past expiry (other live processes' containers are kept)")
  .option('--all', 'remove every managed container, listing them first', false)
  .option('--dry-run', 'only list what would be removed', false)
  .action(async (o: { all: boolean; dryRun: boolean }) => {
    process.exitCode = await cleanup(config(), o, out);
  });

program
  .command('kube')
  .description('Kubernetes helpers (engine.kind kubernetes, docs/scale-out.md)')
  .command('templates')
  .description("print the agent-sandbox SandboxTemplate and SandboxWarmPool of each golden image, as JSON for 'kubectl apply -f -'")
  .option('--namespace <namespace>', 'set this namespace in the manifests (default: none, kubectl applies them to its own)')
  .option('--replicas <n>', 'warm pods kept per image (0: no warm pools)', nonNegativeInt, 1)
  .option('--image <image...>', 'only these images (default: images.default and every language image)')
  .action((o: { namespace?: string; replicas: number; image?: string[] }) => {
    const list = kubeTemplates(config(), {
      replicas: o.replicas,
      ...(o.namespace ? { namespace: o.namespace } : {}),
      ...(o.image ? { images: o.image } : {}),
    });
    out(JSON.stringify(list, null, 2));
  });

program
  .command('task')
  .description('run a multi-step task: an inner loop on Gemini picks each command until done (needs GEMINI_API_KEY)')
  .option('--image <image>', 'image (must be on the allowlist)')
  .addOption(new Option('--language <language>', "a language's image instead of --image").choices([...LANGUAGES]).conflicts('image'))
  .option('--max-commands <n>', 'limit on commands', positiveInt)
  .addOption(new Option('--network <mode>', 'network of the sandbox').choices([...NETWORK_MODES]))
  .option('--step-model <name>', 'Gemini model that picks each command (default gemini-2.5-flash)')
  .option('--summary-model <name>', 'Gemini model that writes the summary (default gemini-2.5-pro)')
  .addOption(projectOption())
  .addOption(projectDirOption())
  .option('--json', 'print { success, summary, logPath, commandsRun } as one line of JSON', false)
  .argument('<description...>', 'the task, in plain words')
  .action(async (words: string[], o: TaskCliOptions & ProjectCliOptions) => {
    const { config: c, project } = projectConfig(o);
    const { projectDir: _dir, project: _mount, ...rest } = o;
    process.exitCode = await task(c, words.join(' '), { ...rest, ...(project ? { project } : {}) }, process.env, out, err);
  });

program
  .command('images')
  .description(
    'the language images (python, nodejs, java, go, ruby, php, dotnet, powershell): list them (present, size, age, how to get them), pull them, or build them offline',
  )
  .argument('[action]', 'list (the default), pull or build')
  .argument('[languages...]', `languages (default: all): ${LANGUAGES.join(', ')}`)
  .option('--json', 'list: print the rows as one line of JSON', false)
  .option('--force', 'build: rebuild images that are present', false)
  .action(async (action: string | undefined, languages: string[], o: { json: boolean; force: boolean }) => {
    process.exitCode = await images(config(), [...(action ? [action] : []), ...languages], o, {
      out,
      err,
      progress: (text) => process.stderr.write(text),
      tty: process.stderr.isTTY === true,
    });
  });

program
  .command('mcp')
  .description('serve the sandboxes to an MCP client over stdio (Claude Code, Codex, Cursor, VS Code): see docs/mcp.md')
  .option('--project <dir>', "the user's project, mounted on request and searched for .genaicode-docker.json (default: the working folder)")
  .action(async (o: { project?: string }) => {
    await runMcpServer({ ...(o.project ? { cwd: resolve(o.project) } : {}) });
    // Ended (input closed, client gone, a signal) with its containers removed: nothing left to wait for.
    process.exit(process.exitCode ?? 0);
  });

program
  .command('demo')
  .description('the main job: a sandbox, four commands (success, failure, huge output, timeout), results as the model gets them')
  .action(async () => {
    process.exitCode = await demo(config(), out);
  });

program.parseAsync().catch((e: unknown) => {
  // A SandboxError's message may quote the engine: one line. Anything else is our bug: its stack.
  err(isSandboxError(e) ? displayText(`${e.code}: ${e.message}`, 4000) : e instanceof Error ? (e.stack ?? e.message) : String(e));
  process.exitCode = isSandboxError(e) && e.code === 'ENGINE_UNAVAILABLE' ? 3 : 1;
});
