import http from 'node:http';
import https from 'node:https';
import { createRequire } from 'node:module';

/**
 * docker-modem sends every request through its own redirect-following layer
 * (docker-modem/lib/http.js): on a 3xx it makes a second request, with no error listener,
 * to wherever the Location header points. The engine answers some malformed paths with a
 * 301 (`GET /images/a/./json`), and `http:/images/...` then names the host `images`: a
 * DNS lookup and a connection off this machine, and an uncaught 'error' that ends the
 * process. The engine never redirects a request we make, so none is followed: the layer's
 * two entries become Node's own request functions, and a 3xx reaches docker-modem's status
 * check as the unexpected status it is (an ENGINE_ERROR). docker-modem reads these entries
 * at each request, so this holds for every Docker instance in this process.
 */
// Resolved from dockerode's own folder: the copy it loads, even where npm nests one under it.
const fromDockerode = createRequire(createRequire(import.meta.url).resolve('dockerode'));
const modemHttp = fromDockerode('docker-modem/lib/http.js') as Record<'http' | 'https', { request: unknown }>;
modemHttp.http = { ...modemHttp.http, request: http.request };
modemHttp.https = { ...modemHttp.https, request: https.request };
