import type { z } from 'zod/v4';
import type { ExecResult } from '../commands/exec-types.js';
import type { ProcessStarted } from '../processes/process-table.js';
import type { Sandbox } from '../sandbox/sandbox.js';
import type { ActionSpec } from './action-spec.js';
import {
  LIST_PROCESSES,
  READ_PROCESS_OUTPUT,
  STOP_PROCESS,
  WAIT_FOR_OUTPUT,
  WAIT_FOR_PORT,
  waitTimeout,
  WRITE_PROCESS_INPUT,
} from './process-specs.js';

/**
 * The bodies of the background-process actions, written once for both hosts (the GenAIcode
 * handlers and the MCP tools): each takes the sandbox and the checked arguments and returns
 * the model's answer and the line a person reads.
 */

export interface ActionOutcome {
  answer: Record<string, unknown>;
  userText: string;
}

/** runCommand's way: in the background at once, until yieldMs, or as a plain command. */
export function runCommandIn(
  sandbox: Sandbox,
  cmd: string,
  o: { timeoutMs?: number | undefined; signal?: AbortSignal | undefined; background?: boolean | undefined; yieldMs?: number | undefined },
): Promise<ExecResult | ProcessStarted> {
  const base = { ...(o.timeoutMs ? { timeoutMs: o.timeoutMs } : {}) };
  // A background process outlives the call: the call's cancel does not end it (stopProcess does).
  if (o.background) return sandbox.exec(cmd, { ...base, background: true });
  if (o.yieldMs !== undefined) return sandbox.exec(cmd, { ...base, yieldMs: o.yieldMs });
  return sandbox.exec(cmd, { ...base, ...(o.signal ? { signal: o.signal } : {}) });
}

export function isProcessHandle(r: ExecResult | ProcessStarted): r is ProcessStarted {
  return 'processId' in r;
}

/** A command handed to the background: its handle; the log's path for the person. */
export function handleOutcome(container: string, cmd: string, h: ProcessStarted): ActionOutcome {
  const { logPath, ...answer } = h;
  return {
    answer,
    userText: `${container}$ ${cmd.length > 80 ? `${cmd.slice(0, 80)}…` : cmd} -> ${h.processId} ${h.status}; log: ${logPath}`,
  };
}

/** A background-process action: its spec and its body (method syntax: a list holds actions of every schema). */
export interface ProcessAction<S extends z.ZodObject = z.ZodObject> {
  spec: ActionSpec<S>;
  run(sandbox: Sandbox, args: z.output<S>): ActionOutcome | Promise<ActionOutcome>;
}

const action = <S extends z.ZodObject>(spec: ActionSpec<S>, run: ProcessAction<S>['run']): ProcessAction<S> => ({ spec, run });

/** Every background-process action, in the order the model's list shows them. */
export const PROCESS_ACTIONS: ProcessAction[] = [
  action(READ_PROCESS_OUTPUT, (sb, a) => {
    const { logPath, processId, ...answer } = sb.readProcessOutput(a.processId, a.sinceLine);
    return { answer, userText: `${sb.name} ${processId}: lines ${answer.fromLine}-${answer.toLine} (${answer.status}); log: ${logPath}` };
  }),
  action(WRITE_PROCESS_INPUT, (sb, a) => {
    const { processId, ...answer } = sb.writeProcessInput(a.processId, a.text, a.closeInput === true);
    return { answer, userText: `${sb.name} ${processId}: wrote ${answer.bytes} bytes${a.closeInput ? ', input closed' : ''}.` };
  }),
  action(STOP_PROCESS, async (sb, a) => {
    const r = await sb.stopProcess(a.processId);
    const answer = { status: r.status, exitCode: r.exitCode ?? null, verified: r.verified, ...(r.report ? { left: r.report } : {}) };
    return {
      answer,
      userText: `${sb.name} ${r.processId}: ${r.status}${r.verified ? '' : ` (not verified: ${r.report})`}; log: ${r.logPath}`,
    };
  }),
  action(LIST_PROCESSES, (sb, _a) => {
    const processes = sb.listProcesses().map(({ logPath: _log, startedAt: _at, ...p }) => p);
    return { answer: { processes }, userText: `${sb.name}: ${processes.length} background process(es).` };
  }),
  action(WAIT_FOR_PORT, async (sb, a) => {
    const r = await sb.waitForPort(a.port, waitTimeout(a.timeoutMs));
    const published = sb.info.ports?.[String(a.port)];
    return {
      answer: { ...r, ...(published ? { hostAddress: published } : {}) },
      userText: `${sb.name}: port ${a.port} ${r.listening ? `listening on ${r.address}` : 'not listening'} after ${r.waitedMs} ms.`,
    };
  }),
  action(WAIT_FOR_OUTPUT, async (sb, a) => {
    const r = await sb.waitForOutput(a.processId, a.pattern, waitTimeout(a.timeoutMs));
    return { answer: r, userText: `${sb.name} ${a.processId}: ${r.found ? `found at line ${String(r.line)}` : 'not found'}.` };
  }),
];
