import { createHash, randomBytes } from 'node:crypto';
import { SandboxError } from '../../errors.js';
import { swallowed } from '../../debug.js';
import type { ExecInput, ExecSession, ExecSpec, PathStat, StreamId } from '../container-engine.js';

/**
 * Files in a pod, over exec: a cluster has no archive API. The archive is copied into the
 * pod first, and unpacked only once the pod has said it received exactly the bytes sent (its
 * length and SHA-256): a copy over a WebSocket that ends early otherwise looks like success
 * (client-node's own cpToPod has silently truncated files that way).
 */

export type RunExec = (spec: ExecSpec, onOutput: (stream: StreamId, chunk: Buffer) => void) => Promise<ExecSession>;

interface Ran {
  exitCode: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a short helper to its end and keeps its (small) output. */
async function run(exec: RunExec, spec: ExecSpec): Promise<Ran> {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  const s = await exec(spec, (stream, chunk) => (stream === 'stdout' ? out : err).push(Buffer.from(chunk)));
  const { exitCode } = await s.done;
  return { exitCode, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8').trim().slice(0, 500) };
}

/**
 * What is at `path`, its parents resolved and itself not (as the Docker archive API says it):
 * a link is reported as one, with where it leads resolved in the pod.
 */
const STAT_SCRIPT = `p=$1
if [ -L "$p" ]; then printf 'link 0 %s' "$(readlink -f -- "$p" || readlink -- "$p")"
elif [ -d "$p" ]; then printf 'dir 0 '
elif [ -f "$p" ]; then printf 'file %s ' "$(wc -c < "$p")"
elif [ -e "$p" ]; then printf 'other 0 '
else printf 'none 0 '; fi`;

export async function statPathOverExec(exec: RunExec, path: string): Promise<PathStat | undefined> {
  const r = await run(exec, { cmd: ['/bin/sh', '-c', STAT_SCRIPT, 'sh', path] });
  const m = /^(link|dir|file|other|none) +(\d+) ?([\s\S]*)$/.exec(r.stdout.trim());
  if (r.exitCode !== 0 || !m)
    throw new SandboxError('ENGINE_ERROR', `Could not look at ${path} in the pod: ${r.stderr || r.stdout || `exit ${r.exitCode}`}`);
  if (m[1] === 'none') return undefined;
  return { type: m[1] as PathStat['type'], size: Number(m[2]), ...(m[1] === 'link' && m[3] ? { linkTarget: m[3] } : {}) };
}

/** The bytes of `input` as they are sent, counted and hashed on the way. */
async function* counted(input: ExecInput, tally: { bytes: number; hash: ReturnType<typeof createHash> }): AsyncIterable<Buffer> {
  const chunks: AsyncIterable<Buffer> | Buffer[] = Buffer.isBuffer(input) ? [input] : input;
  for await (const chunk of chunks) {
    tally.bytes += chunk.length;
    tally.hash.update(chunk);
    yield chunk;
  }
}

/** Receives stdin into the file $1 (new, private), then says its length and SHA-256. */
const RECEIVE_SCRIPT = `umask 077
set -C
cat > "$1" || exit 1
printf '%s %s' "$(wc -c < "$1")" "$(sha256sum < "$1" | cut -d' ' -f1)"`;

/** Unpacks the archive $1 into the folder $2 and removes it, however the unpacking ends. */
const UNPACK_SCRIPT = `tar -x -f "$1" -C "$2"
s=$?
rm -f -- "$1"
exit $s`;

function writeFailed(path: string, why: string): SandboxError {
  return new SandboxError('FILE_OPERATION_FAILED', why, { data: { path, reason: 'cannot write' } });
}

/**
 * Extracts a tar archive into the folder `path` of the pod: the archive is received beside
 * where it goes (under a name nobody can guess), checked, unpacked by `tar`, and removed.
 * Owners in the archive apply where the pod runs as root, as with the engine's archive API.
 * @throws SandboxError FILE_OPERATION_FAILED when the copy arrived short or altered, or tar refused it
 */
export async function extractOverExec(exec: RunExec, path: string, archive: ExecInput): Promise<void> {
  const staged = `${path.replace(/\/+$/, '')}/.gcd-archive-${randomBytes(12).toString('hex')}`;
  const tally = { bytes: 0, hash: createHash('sha256') };
  let unpacked = false;
  try {
    const got = await run(exec, { cmd: ['/bin/sh', '-c', RECEIVE_SCRIPT, 'sh', staged], stdin: counted(archive, tally) });
    const sent = `${tally.bytes} ${tally.hash.digest('hex')}`;
    if (got.exitCode !== 0)
      throw writeFailed(path, `the archive could not be received in ${path}: ${got.stderr || `exit ${got.exitCode}`}`);
    if (got.stdout.trim() !== sent)
      throw writeFailed(
        path,
        `the archive arrived altered in the pod (sent ${tally.bytes} bytes, received ${got.stdout.trim().split(' ')[0] || 'nothing'}); nothing was unpacked`,
      );
    unpacked = true;
    const r = await run(exec, { cmd: ['/bin/sh', '-c', UNPACK_SCRIPT, 'sh', staged, path] });
    if (r.exitCode !== 0) throw writeFailed(path, `tar could not unpack into ${path}: ${r.stderr || `exit ${r.exitCode}`}`);
  } finally {
    // The unpacking removes the copy itself; any other end leaves one to remove here.
    if (!unpacked) {
      await run(exec, { cmd: ['rm', '-f', '--', staged] }).catch((e: unknown) => swallowed('removing a staged archive', e));
    }
  }
}
