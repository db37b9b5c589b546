/**
 * The first Ctrl-C aborts the returned signal (the running command's process tree is then
 * killed, the result printed and the container removed); the second one ends the process
 * at once (the exit hook still removes the containers). Our listener stays registered
 * until then, so the exit hook sees that someone else handles the first SIGINT. Call
 * `dispose` when done.
 */
export function cancelOnSigint(say: (line: string) => void, message: string): { signal: AbortSignal; dispose: () => void } {
  const abort = new AbortController();
  const onSigint = () => {
    if (!abort.signal.aborted) {
      say(message);
      abort.abort();
      return;
    }
    process.removeListener('SIGINT', onSigint);
    process.kill(process.pid, 'SIGINT');
  };
  process.on('SIGINT', onSigint);
  return { signal: abort.signal, dispose: () => process.removeListener('SIGINT', onSigint) };
}
