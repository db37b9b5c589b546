// @ts-check
/**
 * Removes containers (force) and prints the ids it could not remove, as a JSON array.
 * Run as a child with Node's built-in modules only, while the parent process is exiting
 * (the parent's exit hook waits for it with spawnSync: no asynchronous work can run there).
 * Input on stdin: { ids: string[], volumes?: string[], request: { socketPath } | { host, port, protocol, certPath? } }.
 * `volumes` (Podman's named project overlays of these containers) are removed once every
 * container request has ended, best effort and never forced: one still in use stays.
 */
const fs = require('node:fs');
const path = require('node:path');
const http = require('node:http');
const https = require('node:https');

/** @type {{ ids: string[]; volumes?: string[]; request: { socketPath?: string; host?: string; port?: number; protocol?: string; certPath?: string } }} */
const { ids, volumes = [], request } = JSON.parse(fs.readFileSync(0, 'utf8'));
const secure = request.protocol === 'https:';
const tls =
  secure && request.certPath
    ? {
        ca: fs.readFileSync(path.join(request.certPath, 'ca.pem')),
        cert: fs.readFileSync(path.join(request.certPath, 'cert.pem')),
        key: fs.readFileSync(path.join(request.certPath, 'key.pem')),
      }
    : {};
/** @type {string[]} */
const left = [];
let pending = ids.length;
const done = () => {
  if (--pending === 0) removeVolumes(() => process.stdout.write(JSON.stringify(left)));
};

/** @param {string} path @param {(status: number, body: string) => void} answer */
function del(path, answer) {
  const req = (secure ? https : http).request({ ...request, ...tls, method: 'DELETE', path }, (res) => {
    let body = '';
    res.on('data', (chunk) => {
      body += chunk;
    });
    res.on('error', () => answer(0, body));
    res.on('end', () => answer(res.statusCode ?? 0, body));
  });
  req.on('error', () => answer(0, ''));
  req.end();
}

/** @param {() => void} then */
function removeVolumes(then) {
  let waiting = volumes.length;
  if (waiting === 0) return then();
  for (const name of volumes)
    del(`/volumes/${encodeURIComponent(name)}`, () => {
      if (--waiting === 0) then();
    });
}

for (const id of ids) {
  del(`/containers/${encodeURIComponent(id)}?force=true&v=true`, (status, body) => {
    // Gone already: 404 (Podman: 500 "no such container"), or 409 removal in progress.
    const gone = status === 404 || status === 409 || (status === 500 && /no such container/i.test(body));
    if (status === 0 || (status >= 300 && !gone)) left.push(id);
    done();
  });
}
