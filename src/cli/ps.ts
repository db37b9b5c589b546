import { hostname } from 'node:os';
import type { Config } from '../config/config-schema.js';
import type { ContainerEngine, ContainerSummary } from '../engine/container-engine.js';
import { createEngine } from '../engine/create-engine.js';
import { displayText as t } from '../display-text.js';
import { poll, within } from '../retry.js';
import { LABEL, MANAGED_FILTER, parseOwner, processStart } from '../sandbox/labels.js';
import { processAlive, REMOVE_BOUND_MS } from '../sandbox/sweep.js';
import {
  checkLookupId,
  JOB_ID,
  jobsDir,
  listRecords,
  myUid,
  processUid,
  readRecord,
  supervisorAlive,
  unknownId,
  writeRecord,
  type JobRecord,
} from './jobs.js';

/**
 * `ps` and `kill`: the background jobs of this user (their records) and the managed
 * containers whose owner is a live process of this user on this host. A container whose
 * owner is gone cannot be told apart from another user's, unless a job record of ours names
 * it: only those are shown as orphans (`cleanup` removes the others).
 */

export interface PsRow {
  id: string;
  kind: 'job' | 'container';
  /** running, starting, exited N, killed, timed out, expired, container gone, failed, orphaned (supervisor gone, container left), lost (both gone, no end recorded). */
  state: string;
  started?: string;
  expiresAt?: string;
  image?: string;
  command: string;
  container?: { id: string; name: string };
  pid?: number;
}

/** How long `kill` waits for a supervisor to stop its command and remove the container. */
const KILL_BOUND_MS = 30_000;

/** A job's state from its record and what is alive. */
function jobState(r: JobRecord, containerPresent: boolean): string {
  const alive = supervisorAlive(r);
  // A container its supervisor left behind (killed, or its removal failed) is shown whatever the record says.
  if (containerPresent && !alive) return 'orphaned';
  if (r.state === 'ended' || r.state === 'failed') return r.reason === 'exited' ? `exited ${r.exitCode ?? '?'}` : (r.reason ?? r.state);
  return alive ? r.state : 'lost';
}

const ENDED = (state: string) => !['running', 'starting', 'orphaned'].includes(state);

/** Is the live owner of this container a process of this user on this host? */
function ownedByMe(c: ContainerSummary): boolean {
  const owner = parseOwner(c.labels[LABEL.owner], c.labels[LABEL.ownerStart]);
  if (!owner || owner.host !== hostname() || !processAlive(owner.pid)) return false;
  if (owner.start !== undefined && processStart(owner.pid) !== owner.start) return false;
  return myUid === undefined || processUid(owner.pid) === myUid;
}

/** Every row: each job record, and each managed container of this user's that no job names. */
async function gather(config: Config, engine: ContainerEngine): Promise<{ rows: PsRow[]; containers: ContainerSummary[] }> {
  const records = listRecords(jobsDir(config.logs.dir));
  const containers = await engine.listContainers(MANAGED_FILTER);
  const live = (c: ContainerSummary) => c.state !== 'removing' && c.state !== 'dead';
  const rows: PsRow[] = records.map((r) => {
    const present = containers.some((c) => c.id === r.container?.id && live(c));
    return {
      id: r.id,
      kind: 'job',
      state: jobState(r, present),
      started: r.started,
      ...(r.expiresAt ? { expiresAt: r.expiresAt } : {}),
      ...(r.image ? { image: r.image } : {}),
      command: r.command,
      ...(r.container ? { container: r.container } : {}),
      pid: r.pid,
    };
  });
  for (const c of containers) {
    if (!live(c) || records.some((r) => r.container?.id === c.id) || !ownedByMe(c)) continue;
    const owner = parseOwner(c.labels[LABEL.owner]);
    const name = c.names[0] ?? c.id.slice(0, 12);
    rows.push({
      id: name,
      kind: 'container',
      state: 'running',
      started: c.labels[LABEL.createdAt] ?? c.createdAt.toISOString(),
      ...(c.labels[LABEL.expiresAt] ? { expiresAt: c.labels[LABEL.expiresAt] } : {}),
      image: c.image,
      command: `(a container of process ${owner?.pid ?? '?'})`,
      container: { id: c.id, name },
      ...(owner ? { pid: owner.pid } : {}),
    });
  }
  return { rows, containers };
}

function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  return `${Math.floor(s / 86400)}d${Math.floor((s % 86400) / 3600)}h`;
}

/** `ps`: running jobs and containers (and orphans); with `all`, ended jobs too. Every field from a record or the engine is shown with its control characters named. */
export async function ps(config: Config, o: { all: boolean; json: boolean }, out: (line: string) => void): Promise<number> {
  const { rows } = await gather(config, createEngine(config.engine));
  const shown = o.all ? rows : rows.filter((r) => !ENDED(r.state));
  if (o.json) {
    out(JSON.stringify(shown));
    return 0;
  }
  const now = Date.now();
  const table = [
    ['ID', 'STATE', 'AGE', 'EXPIRES IN', 'IMAGE', 'COMMAND'],
    ...shown.map((r) => [
      t(r.id, 64),
      t(r.state, 40),
      r.started ? duration(now - Date.parse(r.started)) : '-',
      r.expiresAt && !ENDED(r.state) ? duration(Date.parse(r.expiresAt) - now) : '-',
      t(r.image ?? '-', 60),
      t(r.command, 60),
    ]),
  ];
  const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  for (const row of table)
    out(
      row
        .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!)))
        .join('  ')
        .trimEnd(),
    );
  if (!shown.length) out(o.all ? '(no background jobs or containers of yours)' : '(none running; `ps --all` shows ended jobs too)');
  return 0;
}

/** The job record named by a job id or its container's name, or undefined. */
export function findJob(dir: string, id: string): JobRecord | undefined {
  checkLookupId(id);
  if (JOB_ID.test(id)) return readRecord(dir, id);
  return listRecords(dir).find((r) => r.container?.name === id);
}

/**
 * `kill`: a job's supervisor gets SIGTERM (it stops the command's tree and removes the
 * container); a supervisor that is gone or does not finish in time, and a plain container of
 * this user's, has the container removed from here. Only a container whose owner label is
 * the record's supervisor is removed for a job: a record cannot point at another container.
 */
export async function kill(config: Config, id: string, out: (line: string) => void, err: (line: string) => void): Promise<number> {
  const dir = jobsDir(config.logs.dir);
  const engine = createEngine(config.engine);
  const job = findJob(dir, id);
  if (!job) {
    const { rows } = await gather(config, engine);
    const row = rows.find((r) => r.kind === 'container' && (r.id === id || r.container?.id === id));
    if (!row?.container) throw unknownId(id);
    return removeAndSay(engine, row.container, `container ${row.container.name}`, out, err);
  }
  let record = job;
  if ((record.state === 'running' || record.state === 'starting') && supervisorAlive(record)) {
    process.kill(record.pid, 'SIGTERM');
    const ended = await poll(
      () => {
        const now = readRecord(dir, record.id);
        if (now && (now.state === 'ended' || now.state === 'failed')) return now;
        return supervisorAlive(record) ? undefined : null;
      },
      { timeoutMs: KILL_BOUND_MS, intervalMs: 200 },
    );
    if (ended) record = ended;
    else if (ended === undefined)
      err(`the supervisor of ${record.id} did not finish within ${KILL_BOUND_MS / 1000} s: removing its container from here`);
  }
  if (record.state !== 'ended' && record.state !== 'failed') {
    record = { ...record, state: 'ended', reason: 'killed', exitCode: null, ended: new Date().toISOString() };
    writeRecord(dir, record);
  }
  if (!record.container) {
    out(`${record.id} has ended (${jobState(record, false)}); it had no container`);
    return 0;
  }
  const c = await engine.inspectContainer(record.container.id);
  if (c && (c.labels[LABEL.managed] !== 'true' || c.labels[LABEL.owner] !== `${record.host}:${record.pid}`)) {
    err(`the container ${t(record.container.name)} is not the one job ${record.id} started (its owner label differs): left alone`);
    return 1;
  }
  return removeAndSay(engine, record.container, `job ${record.id} (${jobState(record, false)})`, out, err);
}

/** Removes the container if it is still there, and says whether it is gone. */
async function removeAndSay(
  engine: ContainerEngine,
  container: { id: string; name: string },
  what: string,
  out: (line: string) => void,
  err: (line: string) => void,
): Promise<number> {
  const there = await engine.inspectContainer(container.id);
  if (there && there.status !== 'removing') {
    const removed = await within(engine.removeContainer(container.id, true), REMOVE_BOUND_MS);
    if (!removed) {
      err(`${what}: the engine did not remove ${t(container.name)} within ${REMOVE_BOUND_MS / 1000} s; it ends at its expiry`);
      return 1;
    }
  }
  const left = await poll(async () => ((await engine.inspectContainer(container.id)) ? undefined : true), {
    timeoutMs: 10_000,
    intervalMs: 200,
  });
  if (!left) {
    err(`${what}: ${t(container.name)} is still there after its removal`);
    return 1;
  }
  out(`${what}: its container ${t(container.name)} is gone`);
  return 0;
}
