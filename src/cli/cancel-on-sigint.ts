/**
 * The first Ctrl-C aborts the returned signal (the running command's process tree is then
 * killed and the container removed); a second one gets Node's default (exit at once; the
 * exit hook still removes the containers). Call `dispose` when done.
 */
export function cancelOnSigint(say: (line: string) => void, message: string): { signal: AbortSignal; dispose: () => void } {
  const abort = new AbortController();
  const onSigint = () => {
    say(message);
    process.removeListener('SIGINT', onSigint);
    abort.abort();
  };
  process.on('SIGINT', onSigint);
  return { signal: abort.signal, dispose: () => process.removeListener('SIGINT', onSigint) };
}
