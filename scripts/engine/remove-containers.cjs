// @ts-check
/**
 * Removes containers (force) and prints the ids it could not remove, as a JSON array.
 * Run as a child with Node's built-in modules only, while the parent process is exiting
 * (the parent's exit hook waits for it with spawnSync: no asynchronous work can run there).
 * Input on stdin: { ids: string[], request: { socketPath } | { host, port, protocol, certPath? } }.
 */
const fs = require('node:fs');
const path = require('node:path');
const http = require('node:http');
const https = require('node:https');

/** @type {{ ids: string[]; request: { socketPath?: string; host?: string; port?: number; protocol?: string; certPath?: string } }} */
const { ids, request } = JSON.parse(fs.readFileSync(0, 'utf8'));
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
  if (--pending === 0) process.stdout.write(JSON.stringify(left));
};
for (const id of ids) {
  const options = { ...request, ...tls, method: 'DELETE', path: `/containers/${encodeURIComponent(id)}?force=true&v=true` };
  const req = (secure ? https : http).request(options, (res) => {
    let body = '';
    res.on('data', (chunk) => {
      body += chunk;
    });
    res.on('error', () => {
      left.push(id);
      done();
    });
    res.on('end', () => {
      const status = res.statusCode ?? 0;
      // Gone already: 404 (Podman: 500 "no such container"), or 409 removal in progress.
      const gone = status === 404 || status === 409 || (status === 500 && /no such container/i.test(body));
      if (status >= 300 && !gone) left.push(id);
      done();
    });
  });
  req.on('error', () => {
    left.push(id);
    done();
  });
  req.end();
}
