#!/usr/bin/env node
// Tiny TCP/HTTP agent the fleet netns test runs inside network namespaces (`ip netns exec NS node
// netns-agent.js MODE ...`). Every result is one JSON line on stdout.
//   echo PORT [HOST]                   echo server (HOST default 0.0.0.0; '::' for IPv6); one line per finished connection {event:'conn', remote, bytes}
//   source PORT [HOST]                 sends data forever to every connection
//   client HOST PORT BYTES TIMEOUT_MS  send BYTES random bytes, half-close, read the echo; {ok, sentSha, recvSha, ...}
//   retry HOST PORT BYTES TRY_MS DEADLINE_MS  {event:'ready'}; on SIGUSR2 client tries until one succeeds; {ok, tries, at, ...}
//   sink HOST PORT TIMEOUT_MS          read a source; {event:'flowing', t} after 1 MiB, then {event:'closed', t, error}
//   probe URL TIMEOUT_MS               GET until 200; {ok, status, ms}
//   forward HOST PORT UNIX_PATH        relay every TCP connection to HOST:PORT to a unix socket (a stand-in
//                                      for the API server's address on the pod network); {event:'listening'}
'use strict';
const net = require('net');
const http = require('http');
const crypto = require('crypto');

const out = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);
const [mode, ...args] = process.argv.slice(2);

/** One echo try: send `payload`, half-close, read the echo back within `timeoutMs`; `done` gets its result once. */
function echoOnce(host, port, payload, timeoutMs, done) {
  const sentSha = crypto.createHash('sha256').update(payload).digest('hex');
  const h = crypto.createHash('sha256');
  let received = 0;
  const t0 = Date.now();
  let ended = false;
  const finish = (o) => { if (ended) return; ended = true; done({ ms: Date.now() - t0, sent: payload.length, received, sentSha, ...o }); };
  const s = net.connect({ host, port, allowHalfOpen: true });
  const timer = setTimeout(() => { s.destroy(); finish({ ok: false, error: 'timeout' }); }, timeoutMs);
  s.on('connect', () => { s.end(payload); });
  s.on('data', (d) => { received += d.length; h.update(d); });
  s.on('end', () => {
    clearTimeout(timer);
    const recvSha = h.digest('hex');
    finish({ ok: recvSha === sentSha && received === payload.length, recvSha, local: s.localAddress });
    s.destroy();
  });
  s.on('error', (e) => { clearTimeout(timer); finish({ ok: false, error: e.code || e.message }); });
}

if (mode === 'echo' || mode === 'source') {
  const port = Number(args[0]);
  const chunk = crypto.randomBytes(256 * 1024);
  const server = net.createServer({ allowHalfOpen: true }, (s) => {
    const remote = `${s.remoteAddress}:${s.remotePort}`;
    let bytes = 0;
    s.on('error', () => undefined);
    if (mode === 'echo') {
      s.on('data', (d) => { bytes += d.length; if (!s.write(d)) { s.pause(); s.once('drain', () => s.resume()); } });
      s.on('end', () => s.end());
    } else {
      const pump = () => { while (!s.destroyed && s.write(chunk)) bytes += chunk.length; };
      s.on('drain', pump);
      pump();
    }
    s.on('close', () => out({ event: 'conn', remote: s.remoteAddress, remotePort: s.remotePort, local: s.localAddress, bytes, from: remote }));
  });
  server.listen(port, args[1] || '0.0.0.0', () => out({ event: 'listening', port }));
} else if (mode === 'client') {
  const [host, port, size, timeoutMs] = [args[0], Number(args[1]), Number(args[2]), Number(args[3])];
  echoOnce(host, port, crypto.randomBytes(size), timeoutMs, (o) => { out(o); process.exit(0); });
} else if (mode === 'retry') {
  // started before a failure, so that a slow process start (seconds beside CPU hogs) is not counted in the
  // failover: {event:'ready'}; on SIGUSR2 (SIGUSR1 is Node's inspector) one echo try after another, each of
  // TRY_MS, 100 ms apart, until one carries its bytes or DEADLINE_MS after the signal; then one line
  // {ok, tries, at (the success's or the end's Date.now()), last try's fields}
  const [host, port, size, tryMs, deadlineMs] = [args[0], Number(args[1]), Number(args[2]), Number(args[3]), Number(args[4])];
  process.on('SIGUSR2', () => {
    const goAt = Date.now();
    let tries = 0;
    const attempt = () => {
      tries++;
      echoOnce(host, port, crypto.randomBytes(size), tryMs, (o) => {
        if (o.ok || Date.now() - goAt >= deadlineMs) { out({ ...o, tries, at: Date.now() }); process.exit(0); }
        setTimeout(attempt, 100);
      });
    };
    attempt();
  });
  setInterval(() => undefined, 60_000); // live until the signal
  out({ event: 'ready' });
} else if (mode === 'sink') {
  const [host, port, timeoutMs] = [args[0], Number(args[1]), Number(args[2])];
  let bytes = 0;
  let flowing = false;
  // half-open, so that on 'end' the kernel can be asked how the stream ended: libuv reports an RST that
  // arrives behind queued data as EOF (POLLHUP after a short read) without reading the pending error; an
  // empty write then gets ECONNRESET for that reset, EPIPE for a FIN followed by a reset, success for a FIN
  // (proxy/src/testkit/dying-peers.ts endOf, the same rule)
  const s = net.connect({ host, port, allowHalfOpen: true });
  const timer = setTimeout(() => { out({ event: 'timeout', t: Date.now(), bytes }); process.exit(0); }, timeoutMs);
  s.on('data', (d) => {
    bytes += d.length;
    if (!flowing && bytes >= 1024 * 1024) { flowing = true; out({ event: 'flowing', t: Date.now() }); }
  });
  let err;
  s.on('error', (e) => { if (err === undefined) err = e.code || e.message; });
  s.on('end', () => {
    if (!s.writable) { s.destroy(); return; }
    s.write(Buffer.alloc(0), (e) => { if (e && err === undefined) err = e.code || e.message; s.destroy(); });
  });
  s.on('close', () => { clearTimeout(timer); out({ event: 'closed', t: Date.now(), error: err, bytes }); process.exit(0); });
} else if (mode === 'probe') {
  const [url, timeoutMs] = [args[0], Number(args[1])];
  const t0 = Date.now();
  const attempt = () => {
    const req = http.get(url, { timeout: 1000 }, (res) => {
      res.resume();
      if (res.statusCode === 200) { out({ ok: true, status: 200, ms: Date.now() - t0 }); process.exit(0); }
      retry(res.statusCode);
    });
    req.on('error', (e) => retry(e.code || e.message));
    req.on('timeout', () => req.destroy(new Error('timeout')));
  };
  const retry = (why) => {
    if (Date.now() - t0 > timeoutMs) { out({ ok: false, status: why, ms: Date.now() - t0 }); process.exit(0); }
    setTimeout(attempt, 100);
  };
  attempt();
} else if (mode === 'forward') {
  const [host, port, unixPath] = [args[0], Number(args[1]), args[2]];
  const server = net.createServer((s) => {
    const u = net.connect(unixPath);
    s.pipe(u).pipe(s);
    const end = () => { s.destroy(); u.destroy(); };
    s.on('error', end); u.on('error', end); s.on('close', end); u.on('close', end);
  });
  server.listen(port, host, () => out({ event: 'listening', port }));
} else {
  process.stderr.write(`unknown mode ${mode}\n`);
  process.exit(2);
}
