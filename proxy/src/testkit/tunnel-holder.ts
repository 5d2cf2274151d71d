#!/usr/bin/env node
/**
 * A peer gateway stand-in for the dead-peer test (runs inside `ip netns exec`): opens COUNT mTLS tunnels
 * to a terminus, each to DST_HOST:DST_PORT, prints "open <n>" once all are accepted, then holds them idle.
 *   tunnel-holder HOST PORT DST_HOST DST_PORT COUNT CA CERT KEY SOURCE_CLUSTER
 */
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as tls from 'node:tls';
import { FRAME_REPLY, FrameReader, decodeReplyBody, encodeOpen } from '../protocol';

const [host, port, dstHost, dstPort, count, ca, cert, key, source] = process.argv.slice(2);
const creds = { ca: fs.readFileSync(ca), cert: fs.readFileSync(cert), key: fs.readFileSync(key) };
let accepted = 0;
const held: tls.TLSSocket[] = [];
for (let i = 0; i < Number(count); i++) {
  const s = tls.connect({ host, port: Number(port), ...creds, minVersion: 'TLSv1.3', checkServerIdentity: () => undefined });
  held.push(s);
  s.on('error', (e) => process.stdout.write(`error ${e.message}\n`));
  s.on('secureConnect', () => s.write(encodeOpen({ connectionId: crypto.randomBytes(16), dstHost, dstPort: Number(dstPort), sourceCluster: source })));
  const reader = new FrameReader(4096, FRAME_REPLY);
  s.on('data', (d: Buffer) => {
    const r = reader.push(d);
    if (r.kind !== 'frame') return;
    s.removeAllListeners('data');
    s.on('data', () => undefined);
    if (decodeReplyBody(r.body).status === 0 && ++accepted === Number(count)) process.stdout.write(`open ${accepted}\n`);
  });
}
setInterval(() => undefined, 1 << 30);
