import { z } from 'zod';
import { ADDABLE_CAPABILITIES, NETWORK_MODES, PROJECT_MOUNTS } from '../policy/policy.js';
import { LANGUAGES } from './languages.js';
import { BOUNDS, byteSize, imageRef, registryPrefix } from './config-values.js';
import { CodeExecuteSchema } from './code-execute-schema.js';

export { BOUNDS, parseByteSize } from './config-values.js';
export { CODE_IMAGE } from './code-execute-schema.js';

/**
 * The configuration's one schema: every setting, its bounds and its default. Loading it
 * (files, environment, options, and the checks across them) is load-config.ts.
 */

/** Images the model may start when no allowlist is configured (glob patterns). */
export const DEFAULT_ALLOWED_IMAGES = [
  'genaicode-docker/*',
  'busybox:*',
  'alpine:*',
  'debian:*',
  'ubuntu:*',
  'python:*',
  'node:*',
  'golang:*',
  'rust:*',
  'eclipse-temurin:*',
] as const;

/** The golden images: built here (docker/build-offline.sh or their Dockerfiles), never pulled. */
const LOCAL_ONLY_IMAGES = ['genaicode-docker/*'] as const;

/** Output up to this many bytes (after capping) reaches the model verbatim, with no summary. */
export const DEFAULT_SUMMARY_THRESHOLD_BYTES = 2048;

export const DEFAULT_IMAGE = 'genaicode-docker/sandbox-minimal:latest';

/**
 * A command's default timeout: real test suites take 25-65 s on a loaded 2-core machine, so
 * a minute cut them off; five leave room for a slower machine and still end a hung command.
 */
export const DEFAULT_COMMAND_TIMEOUT_MS = 5 * 60_000;
/** The longest timeout a model may ask for one command (a deliberate cap below the configurable bound). */
export const MAX_COMMAND_TIMEOUT_MS = 30 * 60_000;
/**
 * Folders a working directory may not be: with a read-only root a tmpfs is mounted on it,
 * which would hide the system's files there (or, on /sys/fs/cgroup, let a command plant
 * the counters the limit flags are read from).
 */
const SYSTEM_FOLDER = /^\/+(?:(?:proc|sys|dev|etc|usr|bin|sbin|lib\w*|boot|run|var\/run)(?:\/.*)?)?$/;

export const CONFIG_FILE_NAME = '.genaicode-docker.json';
export const ENV_PREFIX = 'GENAICODE_DOCKER_';

const MountAllow = z
  .object({
    /** Host path (absolute, or relative to the project root) that may be mounted, with everything under it. */
    hostPath: z.string().min(1),
    /** Whether a mount of it may be writable. @default false */
    writable: z.boolean().default(false),
  })
  .strict();

export const ConfigSchema = z
  .object({
    engine: z
      .object({
        /** Engine address in DOCKER_HOST form (unix://, tcp://, ssh://, npipe://). @default $DOCKER_HOST */
        host: z.string().min(1).optional(),
        /** Unix socket path; used when no host is set. @default /var/run/docker.sock */
        socketPath: z.string().min(1).optional(),
        /** An ssh:// engine's forward, through the system's OpenSSH (docs/engines.md). */
        ssh: z
          .object({
            /** ssh_config file for the ssh child (ssh -F), instead of ~/.ssh/config. @default ssh's own */
            configFile: z.string().min(1).optional(),
            /** The engine's socket on the server, where the address has no path. @default /var/run/docker.sock */
            remoteSocket: z.string().startsWith('/').optional(),
          })
          .strict()
          .optional(),
        /**
         * Start sandboxes on a rootless engine on cgroups v1, which cannot enforce a container's
         * memory, CPU and process limits (docs/engines.md, "Rootless Podman"): the operator's
         * choice for a machine of their own. Off, every start there is refused. @default false
         */
        rootlessWithoutLimits: z.boolean().optional(),
        /** Which engine runs the containers: a Docker API, or a Kubernetes cluster (docs/scale-out.md). @default docker */
        kind: z.enum(['docker', 'kubernetes']).optional(),
        /** The cluster, where `kind` is kubernetes. */
        kubernetes: z
          .object({
            /** Kube config file. @default $KUBECONFIG, then ~/.kube/config */
            kubeconfig: z.string().min(1).optional(),
            /** Its context. @default the current context */
            context: z.string().min(1).optional(),
            /** Namespace of the pods. @default the context's, else "default" */
            namespace: z
              .string()
              .regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'a namespace name (lowercase letters, digits and -)')
              .optional(),
            /** How long a pod may take to be scheduled, pull its image and run. @default 120 */
            startTimeoutSeconds: z.number().int().min(5).max(3600).optional(),
            /** Each sandbox a pod of our own, or an agent-sandbox SandboxClaim from a template; auto: a claim where API discovery finds the claim resource. @default auto */
            mode: z.enum(['auto', 'pod', 'claim']).optional(),
            /** The SandboxTemplate each image's claims name, where it is not the name derived from the image (`genaicode-docker kube templates`). */
            templates: z
              .record(
                z.string().min(1),
                z.string().regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'a template name (lowercase letters, digits and -)'),
              )
              .optional(),
          })
          .strict()
          .optional(),
      })
      .strict()
      .default({}),
    images: z
      .object({
        /** Glob patterns of images that may be started, checked at run time. */
        allow: z.array(z.string().min(1)).default([...DEFAULT_ALLOWED_IMAGES]),
        /** Image used when none is given. @default genaicode-docker/sandbox-minimal:latest */
        default: z.string().min(1).default(DEFAULT_IMAGE),
        /** Pull images that are missing locally. @default true */
        pull: z.boolean().default(true),
        /**
         * Images that are built on this machine and never pulled, whatever `pull` says: the
         * golden images' names are a Docker Hub namespace this project does not own, so a pull
         * would run whatever its owner published. @default ['genaicode-docker/*']
         */
        localOnly: z.array(z.string().min(1)).default([...LOCAL_ONLY_IMAGES]),
        /**
         * The image of each language (startContainer's and runContainerTask's `language`, the
         * project's detected language). Each is still checked against `allow`.
         * @default genaicode-docker/<language>:latest
         */
        languages: z.record(z.enum(LANGUAGES), imageRef).default({}),
        /**
         * Registry (host[:port], optionally with a path, e.g. registry.example.com/team) put in
         * front of the language images that name no registry of their own. Such images are no
         * longer `localOnly`: they are pulled from it (and `allow` must cover them).
         */
        registry: registryPrefix.optional(),
        /**
         * Language images pulled in the background when the plugin loads: 'project' (the
         * project's detected language), a list of languages, or [] / false (none). An image
         * built here (`localOnly`) is never pulled: a missing one is reported with how to build it.
         * @default project
         */
        prePull: z.union([z.literal('project'), z.literal(false), z.array(z.enum(LANGUAGES))]).default('project'),
      })
      .strict()
      .default({}),
    limits: z
      .object({
        /** Memory limit (swap included). @default 512m */
        memory: byteSize(BOUNDS.memoryBytes.min, BOUNDS.memoryBytes.max).default('512m'),
        /** CPUs. @default 1 */
        cpus: z.number().min(BOUNDS.cpus.min).max(BOUNDS.cpus.max).default(1),
        /** Maximum number of processes. @default 256 */
        pids: z.number().int().min(BOUNDS.pids.min).max(BOUNDS.pids.max).default(256),
        /**
         * What a container may write to its own filesystem (its writable layer). Enforced by
         * the engine where the storage driver has quotas; else no file may grow past it and
         * the writable layer is measured for as long as the container lives (commands/disk-watch.ts).
         * @default 2g
         */
        disk: byteSize(BOUNDS.diskBytes.min, BOUNDS.diskBytes.max).default('2g'),
      })
      .strict()
      .default({}),
    /** Network of new containers: 'none' (loopback only) or 'bridge'. @default none */
    network: z.enum(NETWORK_MODES).default('none'),
    /**
     * Container ports published on the host's loopback only (127.0.0.1, never another
     * interface), each to a free port the engine picks, so that a dev server in a container
     * can be opened in a browser. Only for containers on the 'bridge' network. @default []
     */
    publishPorts: z.array(z.number().int().min(1).max(65535)).max(16).default([]),
    /** Read-only root filesystem, with a tmpfs at /tmp and the working directory. @default false */
    readOnlyRoot: z.boolean().default(false),
    /** Size of each tmpfs mount. @default 64m */
    tmpfsSize: byteSize(1024 ** 2, 16 * 1024 ** 3).default('64m'),
    /** Capabilities added back on top of the minimal set. @default [] */
    capAdd: z.array(z.enum(ADDABLE_CAPABILITIES)).default([]),
    /**
     * User to run as (name or uid[:gid]); the image's user when unset. With a writable
     * mount it must be a numeric uid[:gid], and it defaults to the host user's.
     */
    user: z.string().min(1).optional(),
    /**
     * Let a container with a writable mount run as root (uid 0). Off, because a root
     * container can leave root-owned set-uid programs in the mounted folder. @default false
     */
    allowRootWithWritableMounts: z.boolean().default(false),
    /** Names of new containers: <prefix><session>-<n> (the seed's containerPrefix). @default genaicode-docker- */
    containerPrefix: z
      .string()
      .regex(/^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,40}$/, 'letters, digits, _ . - (a container name starts with one of them)')
      .default('genaicode-docker-'),
    /** Files inside containers (readContainerFile, writeContainerFile, listContainerDirectory, editContainerFile). */
    files: z
      .object({
        /** Most bytes of text one read returns. @default 32k */
        maxReadBytes: byteSize(1024, 16 * 1024 ** 2).default('32k'),
        /** Most lines one read returns. @default 1000 */
        maxReadLines: z.number().int().min(1).max(1_000_000).default(1000),
        /** Largest file written or edited (and read whole by cp). @default 16m */
        maxWriteBytes: byteSize(1, BOUNDS.stdinBytes.max).default('16m'),
        /** Most entries one listing returns. @default 500 */
        maxListEntries: z.number().int().min(1).max(100_000).default(500),
        /** Deepest a listing goes. @default 5 */
        maxListDepth: z.number().int().min(1).max(50).default(5),
      })
      .strict()
      .default({}),
    /** Working directory inside containers. @default /workspace */
    workdir: z
      .string()
      .startsWith('/')
      .refine(
        (p) => !SYSTEM_FOLDER.test(p),
        'must not be / or a system folder (/proc, /sys, /dev, /etc, /usr, /bin, /sbin, /lib, /boot, /run, /var/run): with a read-only root a tmpfs is mounted there',
      )
      .default('/workspace'),
    /** Host paths that may be mounted into containers (nothing else may be). @default [] */
    mountAllow: z.array(MountAllow).default([]),
    /** The GenAIcode project (its root folder) mounted at the working folder of startContainer and runContainerTask. */
    project: z
      .object({
        /**
         * The most the model may ask for (it asks with the `project` argument; no mount when it
         * does not): 'none', 'ro' (read-only: running the tests, editing on the host and
         * running them again works), 'scratch' (every tool writes, into a layer thrown away
         * at the end: the host never sees a write) or 'rw' (the container's changes are
         * applied to the project after each command, checked; files the host runs are held
         * back). @default ro
         */
        mount: z.enum(PROJECT_MOUNTS).default('ro'),
      })
      .strict()
      .default({}),
    /** Minutes between sweeps for orphaned containers while the plugin runs (0: only at start-up). @default 60 */
    sweepIntervalMinutes: z
      .number()
      .min(0)
      .max(7 * 24 * 60)
      .default(60),
    /** Lifetime of a container: its keep-alive process ends by itself after this. @default 7200 */
    ttlSeconds: z.number().int().min(BOUNDS.ttlSeconds.min).max(BOUNDS.ttlSeconds.max).default(7200),
    exec: z
      .object({
        /** Default per-command timeout. @default 300000 */
        timeoutMs: z.number().int().min(BOUNDS.timeoutMs.min).max(BOUNDS.timeoutMs.max).default(DEFAULT_COMMAND_TIMEOUT_MS),
        /** Bytes of each stream kept for the answer (head + tail); the log keeps all. @default 16384 */
        maxBytes: z
          .number()
          .int()
          .min(256)
          .max(16 * 1024 ** 2)
          .default(16 * 1024),
        /** Lines of each stream kept for the answer (head + tail). @default 500 */
        maxLines: z.number().int().min(10).max(1_000_000).default(500),
        /**
         * Run commands in one long-lived shell per container, so that `cd` and `export` carry
         * over; false: one engine exec per command (an image whose /bin/sh cannot keep one). @default true
         */
        keptShell: z.boolean().default(true),
        /** Background processes (runCommand's background or yieldMs) one container may run at once. @default 8 */
        maxProcesses: z.number().int().min(1).max(64).default(8),
      })
      .strict()
      .default({}),
    logs: z
      .object({
        /**
         * Folder of full command logs (relative paths from the project root). Outside the
         * project by default, so no container with the project mounted can reach it and
         * GenAIcode never sends it to the model as source.
         * @default $XDG_STATE_HOME/genaicode-docker/logs (~/.local/state/genaicode-docker/logs)
         */
        dir: z.string().min(1).optional(),
        /** Older sessions' logs are deleted beyond this total. @default 1g */
        maxTotalBytes: byteSize(BOUNDS.logTotalBytes.min, BOUNDS.logTotalBytes.max).default('1g'),
        /**
         * One command's full log keeps at most this much: its first half and its last half,
         * with a line in the log (and the answer) saying how many bytes were dropped between. @default 64m
         */
        maxCommandBytes: byteSize(BOUNDS.logCommandBytes.min, BOUNDS.logCommandBytes.max).default('64m'),
        /** All logs of one session (one GenAIcode run) keep at most this much together; later logs keep less, then nothing. @default 1g */
        maxSessionBytes: byteSize(BOUNDS.logSessionBytes.min, BOUNDS.logSessionBytes.max).default('1g'),
        /** Logs stop growing while the disk they are on has less free space than this (0: never). @default 1g */
        minFreeBytes: byteSize(BOUNDS.logMinFreeBytes.min, BOUNDS.logMinFreeBytes.max).default('1g'),
        /** Sessions' logs older than this are deleted. @default 14 */
        maxAgeDays: z.number().min(0).max(3650).default(14),
      })
      .strict()
      .default({}),
    plugin: z
      .object({
        /** Ask the user before a container starts. @default true */
        confirmStart: z.boolean().default(true),
        /** Output up to this many bytes (after capping) goes to the model verbatim. @default 2048 */
        summaryThresholdBytes: z
          .number()
          .int()
          .min(0)
          .max(1024 ** 2)
          .default(DEFAULT_SUMMARY_THRESHOLD_BYTES),
      })
      .strict()
      .default({}),
    task: z
      .object({
        /** Commands the inner loop may run. @default 25 */
        maxCommands: z.number().int().min(1).max(500).default(25),
        /** Wall-clock budget of one task. @default 900000 (15 min) */
        budgetMs: z
          .number()
          .int()
          .min(1000)
          .max(24 * 3600 * 1000)
          .default(15 * 60_000),
        /** Network of task containers. @default bridge */
        network: z.enum(NETWORK_MODES).default('bridge'),
      })
      .strict()
      .default({}),
    /** codeExecute's sandbox profile (code-execute-schema.ts). */
    codeExecute: CodeExecuteSchema,
  })
  .strict();

/** The input form: every field optional, sizes as strings or numbers. */
export type ConfigInput = z.input<typeof ConfigSchema>;

/** Fully resolved configuration: every default applied, paths absolute, sizes in bytes. */
export type Config = Omit<z.output<typeof ConfigSchema>, 'logs' | 'images'> & {
  /** `projectAllow`: the project file's image allowlist, which narrows `allow` (an image must match both). */
  images: z.output<typeof ConfigSchema>['images'] & { projectAllow?: string[] };
  /** `dir` absolute, the default applied. */
  logs: z.output<typeof ConfigSchema>['logs'] & { dir: string };
  /** Project root: the folder of `.genaicoderc` if one is found upward, else the working directory. */
  projectRoot: string;
  /** Where each value came from, for `doctor`. */
  sources: string[];
  /** The settings the project's own file lowered (`limits.memory 256 MiB (was 512 MiB)`), named when the user is asked to start a container. */
  projectChanged?: { file: string; settings: string[] } | undefined;
};
