import { spawn } from 'node:child_process';
import { relative } from 'node:path';
import { createInterface } from 'node:readline';
import type { Config } from '../config/config-schema.js';
import { imageForLanguage, OFFLINE_BUILDABLE } from '../images/language-images.js';
import { isLanguage, LANGUAGES, type Language } from '../config/languages.js';
import type { ContainerEngine, ImageInfo } from '../engine/container-engine.js';
import { DockerEngine } from '../engine/docker-engine.js';
import { PullLayers } from '../images/pull-layers.js';
import { displayText as t } from '../display-text.js';
import { isSandboxError } from '../errors.js';
import { imageMatches } from '../policy/policy.js';
import { BUILD_OFFLINE_SCRIPT, dockerfileOf, imageSource } from '../images/golden-images.js';
import { pullFlights } from '../images/pull-flights.js';
import { cancelOnSigint } from './cancel-on-sigint.js';
import { ProgressBoard } from './progress.js';

export const IMAGES_ACTIONS = ['list', 'pull', 'build'] as const;
type ImagesAction = (typeof IMAGES_ACTIONS)[number];

/** How an image is got, as `images list` says it. */
export type ImageGet = 'pull' | 'build-offline' | 'needs-registry' | 'pulls-off' | 'not-allowed';

export interface ImageRow {
  language: Language;
  image: string;
  present: boolean;
  sizeBytes?: number;
  createdAt?: Date;
  get: ImageGet;
}

export interface ImagesIo {
  /** A line of output; it is shown with its control characters named. */
  out(line: string): void;
  err(line: string): void;
  /** Raw text to stderr, for progress bars drawn in place (their text is made safe by ProgressBoard). */
  progress(text: string): void;
  /** Whether stderr is a terminal: bars are then redrawn in place. */
  tty: boolean;
}

export interface ImagesDeps {
  engine?: ContainerEngine;
  /** The offline builder's command line. @default bash docker/build-offline.sh */
  builder?: { command: string; args: string[] };
}

/** Exit code of `images build` when only images that need a registry were asked for (the builder's own). */
const NEEDS_REGISTRY_EXIT = 3;

function getOf(config: Config, language: Language, image: string): ImageGet {
  if (!imageMatches(image, config.images.allow) || (config.images.projectAllow && !imageMatches(image, config.images.projectAllow)))
    return 'not-allowed';
  const source = imageSource(config, image);
  if (source.kind === 'build') return OFFLINE_BUILDABLE.includes(language) ? 'build-offline' : 'needs-registry';
  if (source.kind === 'needs-registry') return 'needs-registry';
  return source.kind === 'unavailable' ? 'pulls-off' : 'pull';
}

const GET_TEXT: Record<ImageGet, (l: Language) => string> = {
  pull: (l) => `pull (images pull ${l})`,
  'build-offline': (l) => `build offline (images build ${l})`,
  'needs-registry': (l) => `needs a registry (build docker/${l}/Dockerfile)`,
  'pulls-off': () => 'pulls are off (images.pull=false)',
  'not-allowed': () => 'not on images.allow',
};

/** `3 days ago`, `5 minutes ago`: the largest whole unit. */
export function ageText(createdAt: Date, now: Date): string {
  const seconds = Math.max(0, Math.round((now.getTime() - createdAt.getTime()) / 1000));
  for (const [unit, size] of [
    ['year', 365 * 86400],
    ['month', 30 * 86400],
    ['week', 7 * 86400],
    ['day', 86400],
    ['hour', 3600],
    ['minute', 60],
  ] as const) {
    const n = Math.floor(seconds / size);
    if (n >= 1) return `${n} ${unit}${n === 1 ? '' : 's'} ago`;
  }
  return 'just now';
}

/** The table of `images list`: one line per language, columns aligned. */
export function formatImageList(rows: readonly ImageRow[], now: Date): string[] {
  const table = [
    ['LANGUAGE', 'IMAGE', 'STATUS', 'SIZE', 'CREATED', 'GET IT'],
    ...rows.map((r) => [
      r.language,
      t(r.image, 200),
      r.present ? 'present' : 'missing',
      r.present && r.sizeBytes !== undefined ? `${Math.round(r.sizeBytes / 1e6)} MB` : '-',
      r.present && r.createdAt ? ageText(r.createdAt, now) : '-',
      GET_TEXT[r.get](r.language),
    ]),
  ];
  const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  return table.map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd(),
  );
}

/** One progress line of docker/build-offline.sh, read. */
export type BuildLine =
  | { image: string; kind: 'step'; step: number; total: number; what: string }
  | { image: string; kind: 'built'; seconds: number }
  | { image: string; kind: 'present' };

/**
 * Reads the builder's progress lines: `[build-offline] <image> step <n>/<total>: <what>`,
 * `[build-offline] <image> built in <seconds> s`, `[build-offline] <image> present`.
 * Anything else (its other messages) is undefined.
 */
export function parseBuildLine(line: string): BuildLine | undefined {
  const m = /^\[build-offline\] (\S+) (.*)$/.exec(line.trimEnd());
  if (!m) return undefined;
  const [, image, rest] = m as unknown as [string, string, string];
  const step = /^step (\d+)\/(\d+): (.*)$/.exec(rest);
  if (step) {
    const n = Number(step[1]);
    const total = Number(step[2]);
    return total > 0 && n <= total ? { image, kind: 'step', step: n, total, what: step[3]! } : undefined;
  }
  const built = /^built in (\d+(?:\.\d+)?) s$/.exec(rest);
  if (built) return { image, kind: 'built', seconds: Number(built[1]) };
  return rest === 'present' ? { image, kind: 'present' } : undefined;
}

/** The languages named, or all of them; a name that is none is an error line. */
function languagesOf(names: readonly string[], io: ImagesIo): Language[] | undefined {
  const bad = names.filter((n) => !isLanguage(n));
  if (bad.length) {
    io.err(`unknown language ${bad.map((b) => JSON.stringify(b)).join(', ')}; languages: ${LANGUAGES.join(', ')}`);
    return undefined;
  }
  return names.length ? [...new Set(names as Language[])] : [...LANGUAGES];
}

/**
 * `genaicode-docker images [list|pull|build] [LANGUAGE...]`. A first word that is a
 * language is `list` of the languages named. Returns the exit code.
 */
export async function images(
  config: Config,
  words: readonly string[],
  options: { json: boolean; force: boolean },
  io: ImagesIo,
  deps: ImagesDeps = {},
): Promise<number> {
  const first = words[0];
  const action: ImagesAction = first && (IMAGES_ACTIONS as readonly string[]).includes(first) ? (first as ImagesAction) : 'list';
  const languages = languagesOf(action === first ? words.slice(1) : words, io);
  if (!languages) return 2;
  const engine = deps.engine ?? new DockerEngine(config.engine);
  try {
    if (action === 'list') return await list(config, engine, languages, options.json, io);
    if (action === 'pull') return await pull(config, engine, languages, io);
    return await build(config, languages, options.force, io, deps.builder);
  } catch (e) {
    io.err(isSandboxError(e) ? `${e.code}: ${e.message}` : String(e));
    return isSandboxError(e) && e.code === 'ENGINE_UNAVAILABLE' ? 3 : 1;
  }
}

async function list(config: Config, engine: ContainerEngine, languages: Language[], json: boolean, io: ImagesIo): Promise<number> {
  const rows: ImageRow[] = await Promise.all(
    languages.map(async (language) => {
      const image = imageForLanguage(config, language);
      const info: ImageInfo | undefined = await engine.inspectImage(image);
      return {
        language,
        image,
        present: info !== undefined,
        ...(info ? { sizeBytes: info.sizeBytes, ...(info.createdAt ? { createdAt: info.createdAt } : {}) } : {}),
        get: getOf(config, language, image),
      };
    }),
  );
  if (json) io.out(JSON.stringify(rows));
  else for (const line of formatImageList(rows, new Date())) io.out(line);
  return 0;
}

async function pull(config: Config, engine: ContainerEngine, languages: Language[], io: ImagesIo): Promise<number> {
  const sigint = cancelOnSigint(io.err, 'canceling the pull');
  let failed = 0;
  try {
    for (const language of languages) {
      const image = imageForLanguage(config, language);
      const get = getOf(config, language, image);
      if (get === 'not-allowed') {
        io.err(`${image} (${language}) is not on images.allow: not pulled`);
        failed++;
        continue;
      }
      if (get === 'build-offline' || get === 'needs-registry') {
        io.err(
          `${image} (${language}) is built on this machine, not pulled (images.localOnly): ${get === 'build-offline' ? `genaicode-docker images build ${language}` : `it needs a registry: build ${relativeDockerfile(language)} where one is reachable`}`,
        );
        failed++;
        continue;
      }
      const board = new ProgressBoard(io.progress, io.tty);
      const layers = new PullLayers(image);
      const started = Date.now();
      io.err(`pulling ${image} (${language})`);
      try {
        await pullFlights.pull(engine, image, {
          signal: sigint.signal,
          onProgress: (p) => {
            const layer = layers.update(p);
            if (!layer) return;
            const fraction = layer.total ? (layer.current ?? 0) / layer.total : layer.done ? 1 : undefined;
            board.update(layer.id, layer.id, layer.status, fraction);
          },
        });
        board.finish();
        io.out(`${image} pulled in ${Math.round((Date.now() - started) / 1000)} s`);
      } catch (e) {
        board.finish();
        if (isSandboxError(e) && (e.code === 'ENGINE_UNAVAILABLE' || e.code === 'ABORTED')) throw e;
        io.err(isSandboxError(e) ? `${e.code}: ${e.message}` : String(e));
        failed++;
      }
    }
  } finally {
    sigint.dispose();
  }
  return failed > 0 ? 1 : 0;
}

/** A Dockerfile's path as a person types it: from the working folder when it is below it. */
function relativeDockerfile(language: Language): string {
  const path = dockerfileOf(language);
  const rel = relative(process.cwd(), path);
  return rel && !rel.startsWith('..') ? rel : path;
}

async function build(config: Config, languages: Language[], force: boolean, io: ImagesIo, builder: ImagesDeps['builder']): Promise<number> {
  const offline: Language[] = [];
  let needsRegistry = 0;
  let notBuilt = 0;
  for (const language of languages) {
    const image = imageForLanguage(config, language);
    const get = getOf(config, language, image);
    if (get === 'build-offline') offline.push(language);
    else if (get === 'needs-registry') {
      io.err(`${image} (${language}) needs a registry: build ${relativeDockerfile(language)} where one is reachable`);
      needsRegistry++;
    } else {
      io.err(
        `${image} (${language}) is not built here: ${get === 'pull' ? `genaicode-docker images pull ${language}` : GET_TEXT[get](language)}`,
      );
      notBuilt++;
    }
  }
  let code = 0;
  if (offline.length) code = await runBuilder(offline, force, io, builder);
  if (code !== 0) return code;
  if (notBuilt > 0) return 1;
  return needsRegistry > 0 && offline.length === 0 ? NEEDS_REGISTRY_EXIT : 0;
}

/** Runs docker/build-offline.sh, its progress lines drawn as bars, its other lines passed on. */
function runBuilder(languages: Language[], force: boolean, io: ImagesIo, builder: ImagesDeps['builder']): Promise<number> {
  const command = builder?.command ?? 'bash';
  const args = [...(builder?.args ?? [BUILD_OFFLINE_SCRIPT]), ...(force ? ['--force'] : []), ...languages];
  const board = new ProgressBoard(io.progress, io.tty);
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const sigint = cancelOnSigint(io.err, 'stopping the build');
    sigint.signal.addEventListener('abort', () => child.kill('SIGTERM'), { once: true });
    const onLine = (line: string) => {
      const parsed = parseBuildLine(line);
      if (!parsed) {
        board.print(line);
        return;
      }
      if (parsed.kind === 'step')
        board.update(parsed.image, parsed.image, `step ${parsed.step}/${parsed.total}: ${parsed.what}`, (parsed.step - 1) / parsed.total);
      else if (parsed.kind === 'built') board.update(parsed.image, parsed.image, `built in ${parsed.seconds} s`, 1);
      else board.update(parsed.image, parsed.image, 'present', 1);
    };
    createInterface({ input: child.stdout }).on('line', onLine);
    createInterface({ input: child.stderr }).on('line', onLine);
    child.once('error', (e) => {
      sigint.dispose();
      io.err(`could not run ${command}: ${e.message}`);
      resolve(1);
    });
    child.once('close', (code, signal) => {
      sigint.dispose();
      board.finish();
      resolve(code ?? (signal ? 130 : 1));
    });
  });
}
