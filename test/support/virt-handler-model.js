/**
 * A MODEL of virt-handler's metrics endpoint, for test/move-bytes.netns.test.ts: the HTTPS server virt-handler runs on
 * its container port `metrics` (8443) and that serves /metrics in Prometheus' text format (kubevirt.io/kubevirt
 * v1.8.4, cmd/virt-handler/virt-handler.go runPrometheusServer: ListenAndServeTLS, HTTP/1.1 only). It stands in for
 * virt-handler because a real one needs a node with libvirt and a migrating domain. It serves, at every GET /metrics,
 * the text in the file it is given (the test writes it with test/support/virt-handler-metrics.ts, whose metric names,
 * help, types and labels are read from that pinned module's source, so they cannot drift), and prints one JSON line
 * per request ({"request": path}) so the test can count the scrapes. Every other path answers 404.
 *
 *   node virt-handler-model.js --listen ADDR:PORT --cert FILE --key FILE --text FILE
 */
'use strict';
const fs = require('node:fs');
const https = require('node:https');

const arg = (name) => {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0 || !process.argv[i + 1]) { console.error(`--${name} is required`); process.exit(2); }
  return process.argv[i + 1];
};
const [host, port] = arg('listen').split(/:(?=\d+$)/);
const textFile = arg('text');
const server = https.createServer({ cert: fs.readFileSync(arg('cert')), key: fs.readFileSync(arg('key')) }, (req, res) => {
  process.stdout.write(`${JSON.stringify({ request: req.url })}\n`);
  if (req.method !== 'GET' || req.url !== '/metrics') { res.writeHead(404).end('404 page not found\n'); return; }
  const body = fs.readFileSync(textFile);
  res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'content-length': body.length }).end(body);
});
server.listen(Number(port), host, () => process.stdout.write(`${JSON.stringify({ listening: `${host}:${port}` })}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
