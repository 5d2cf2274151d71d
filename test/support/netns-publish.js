#!/usr/bin/env node
// One PUBLISH frame sent to a gateway's tunnel port from inside a network namespace, with the gateway
// runtime's own encoder and publisher (proxy/lib): the same mTLS client identity check and frame as a
// real gateway. The fleet trust netns test runs it as a member gone bad and as a non-member.
//   node netns-publish.js JSON   JSON: {host, port, target, fleet, ca, cert, key, claim, pems: [file...], sequence?, headerMaxBytes?}
// Prints one JSON line: {status, reason} (the REPLY: 'accepted' or the refusal name), or {error}.
'use strict';
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');

const lib = path.join(__dirname, '..', '..', 'proxy', 'lib');
const { CONNECTION_ID_BYTES, encodeTrustPublish, refusalName } = require(path.join(lib, 'protocol.js'));
const { publishOnce } = require(path.join(lib, 'trust', 'publisher.js'));
const { pemToDer } = require(path.join(lib, 'trust', 'x509.js'));

const o = JSON.parse(process.argv[2]);
const certs = o.pems.flatMap((f) => pemToDer(fs.readFileSync(f, 'utf8')));
const frame = encodeTrustPublish({
  connectionId: crypto.randomBytes(CONNECTION_ID_BYTES), cluster: o.claim, sequence: BigInt(o.sequence ?? Date.now()), certs,
});
const ctx = {
  fleet: o.fleet, timeoutMs: 5000, headerMaxBytes: o.headerMaxBytes ?? 65536,
  tls: { ca: fs.readFileSync(o.ca), cert: fs.readFileSync(o.cert), key: fs.readFileSync(o.key) },
};
publishOnce(ctx, { host: o.host, port: o.port, cluster: o.target }, frame).then(
  (r) => { process.stdout.write(`${JSON.stringify({ status: refusalName(r.status), reason: r.reason })}\n`); },
  (e) => { process.stdout.write(`${JSON.stringify({ error: e.code || e.message })}\n`); },
);
