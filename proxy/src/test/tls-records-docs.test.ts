/**
 * The record layer's batch sizes as the README and the relay's own header comment state them, read from the
 * constants the relay is compiled with (native/tls13relay.c, tls13rec.h): issue 26 item 5 found the docs saying
 * 16 records / 256 KiB while the code used 32 / 512 KiB, and nothing noticed. This test reads both.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';

const root = path.resolve(__dirname, '..', '..');
const relay = fs.readFileSync(path.join(root, 'native', 'tls13relay.c'), 'utf8');
const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8').replace(/\s+/g, ' ');

/** a `#define NAME <number>` (or `(a * b + ...)`: its first product) of tls13relay.c */
function define(name: string): number {
  const m = new RegExp(`^#define ${name} \\(?(\\d+)(?: \\* (\\d+))?`, 'm').exec(relay);
  assert.ok(m, `#define ${name} in native/tls13relay.c`);
  return Number(m[1]) * Number(m[2] ?? 1);
}

describe('record layer docs match the code', () => {
  const nrec = define('NREC'), maxiov = define('MAXIOV'), inKiB = define('IN_CAP') / 1024;
  const sendKiB = nrec * 16; // TLS13_MAX_PLAIN is 16 KiB of payload per record

  it('constants as read (32 records per readv and send, 512 KiB per recv, 64 records per writev)', () => {
    assert.deepEqual({ nrec, maxiov, inKiB }, { nrec: 32, maxiov: 64, inKiB: 512 });
  });

  it('the relay\'s header comment says the same', () => {
    assert.ok(relay.includes(`one send(2) of up to ${nrec} records (${sendKiB} KiB of payload)`), 'send batch in tls13relay.c');
    assert.ok(relay.includes(`one writev(2) of the\n * plaintext of up to ${maxiov} records`) || relay.includes(`plaintext of up to ${maxiov} records`), 'writev batch');
  });

  it('the README says the same', () => {
    for (const phrase of [
      `one \`readv(2)\` straight into ${nrec} record slots`,
      `sends up to ${nrec} records (${sendKiB} KiB of payload) with one \`send(2)\``,
      `receives up to ${inKiB} KiB of records with one \`recv(2)\``,
      `the plaintext of up to ${maxiov} records with one \`writev(2)\``,
      `Batches of ${nrec} records (${sendKiB} KiB) per \`readv(2)\`/\`recv(2)\``,
    ]) assert.ok(readme.includes(phrase), `README: "${phrase}"`);
  });
});
