// A process that looks like a stale Podman API service to scripts/engine/podman.sh (its
// command line names podman, it listens on the socket) but does not do the work:
//   node fake-podman-service.mjs <socket> ping-only   answers _ping, hangs on everything else
//   node fake-podman-service.mjs <socket> broken      answers _ping, 500 on everything else
//   node fake-podman-service.mjs <socket> silent      accepts connections, never answers
// It ignores SIGTERM (as a wedged service may), so the script's SIGKILL is what ends it.
import { createServer } from 'node:http';

const [socket, mode] = process.argv.slice(2);
process.on('SIGTERM', () => {});
createServer((req, res) => {
  if (mode === 'silent') return;
  if (req.url === '/_ping') {
    res.end('OK');
    return;
  }
  if (mode === 'broken') {
    res.statusCode = 500;
    res.end('{"message":"runtime lost its store"}');
  }
  // ping-only: no answer, ever.
}).listen(socket);
