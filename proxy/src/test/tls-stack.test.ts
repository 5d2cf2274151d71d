/**
 * The gateway's TLS stack (issue 49): `version` reports the Node and OpenSSL the gateway runs on, and `run` and
 * `trust` refuse an end-of-life Node or OpenSSL (or, when the operator sets MM_ALLOW_UNSUPPORTED_TLS_STACK=1,
 * start with a warning). The old stacks are simulated by a preload that overwrites process.versions, so the test
 * needs no old Node; the real one is the Node this file runs on (the gateway's: scripts/node-runtime.js).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { MIN_NODE_MAJOR, MIN_OPENSSL, tlsStack, tlsStackProblem, versionText } from '../tls-stack';
import { HANG_GUARD_MS } from '../testkit/helpers';

const CLI = path.join(__dirname, '..', 'cli.js');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-tls-stack-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** Runs the CLI with process.versions' node and openssl replaced (undefined: the real ones). */
function cli(args: string[], versions?: { node: string; openssl: string }, env: Record<string, string> = {}) {
  const pre = [];
  if (versions) {
    const hook = path.join(tmp, `versions-${versions.node}-${versions.openssl}.js`);
    fs.writeFileSync(hook, `for (const [k, v] of Object.entries(${JSON.stringify(versions)})) Object.defineProperty(process.versions, k, { value: v });\n`);
    pre.push('-r', hook);
  }
  const e: NodeJS.ProcessEnv = { ...process.env, ...env };
  if (!('MM_ALLOW_UNSUPPORTED_TLS_STACK' in env)) delete e.MM_ALLOW_UNSUPPORTED_TLS_STACK;
  return spawnSync(process.execPath, [...pre, CLI, ...args], { encoding: 'utf8', timeout: HANG_GUARD_MS, env: e });
}

describe('tls stack: which Node and OpenSSL the gateway accepts', () => {
  it('refuses Node before 22 and OpenSSL before 3.5, numerically (3.10 is after 3.5), and accepts 3.5 and later', () => {
    const refused = [['20.20.2', '3.5.9'], ['24.22.3', '3.0.19'], ['22.21.0', '3.0.15+quic'], ['24.0.0', '3.4.99'], ['24.0.0', '2.9.9'], ['24.0.0', 'none'], ['v-x', '3.5.0']];
    for (const [node, openssl] of refused) assert.ok(tlsStackProblem({ node, openssl }), `${node}/${openssl} should be refused`);
    const accepted = [['24.22.3', '3.5.9'], ['22.0.0', '3.5.0'], ['24.0.0', '3.10.1'], ['26.0.0', '4.0.0'], ['22.12.0', '3.5.0+quic']];
    for (const [node, openssl] of accepted) assert.equal(tlsStackProblem({ node, openssl }), undefined, `${node}/${openssl} should be accepted`);
    const p = tlsStackProblem({ node: '24.22.3', openssl: '3.0.19' })!;
    assert.match(p, /OpenSSL 3\.0\.19 .*end of support.*3\.5 or later/);
    assert.match(tlsStackProblem({ node: '20.20.2', openssl: '3.0.19' })!, /Node 20\.20\.2 is past its end of life/);
  });

  it('the runtime this file runs on is a supported one (the proxy lanes run on the gateway\'s Node)', () => {
    assert.equal(tlsStackProblem(tlsStack()), undefined, `${process.execPath}: ${JSON.stringify(tlsStack())}`);
    assert.ok(Number(process.versions.node.split('.')[0]) >= MIN_NODE_MAJOR);
  });

  it('the floors are those of scripts/node-runtime.js, which picks the Node the build and the tests use', () => {
    const rt = require(path.join(__dirname, '..', '..', 'scripts', 'node-runtime.js'));
    assert.equal(rt.MIN_NODE_MAJOR, MIN_NODE_MAJOR);
    assert.deepEqual(rt.MIN_OPENSSL, [...MIN_OPENSSL]);
    for (const v of [{ node: '24.0.0', openssl: '3.4.9' }, { node: '21.9.0', openssl: '3.5.0' }, { node: '24.0.0', openssl: '3.5.0' }]) {
      assert.equal(!!rt.unsupported(v), !!tlsStackProblem(v), JSON.stringify(v));
    }
  });
});

describe('tls stack: the CLI', () => {
  it('version prints the version, then Node and OpenSSL; --json the same as fields', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8'));
    const r = cli(['version']);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, versionText(pkg.version));
    assert.equal(r.stdout.split('\n')[1], `node ${process.versions.node}, OpenSSL ${process.versions.openssl}`);
    const j = cli(['version', '--json']);
    assert.deepEqual(JSON.parse(j.stdout), { version: pkg.version, node: process.versions.node, openssl: process.versions.openssl });
    assert.equal(JSON.parse(cli(['version', '--json'], { node: '24.1.0', openssl: '3.0.19' }).stdout).openssl, '3.0.19');
  });

  for (const cmd of ['run', 'trust']) {
    it(`${cmd} refuses OpenSSL 3.0 and Node 20 before reading anything, naming the versions and the fix`, () => {
      for (const v of [{ node: '24.22.3', openssl: '3.0.19' }, { node: '20.20.2', openssl: '3.0.19' }]) {
        const r = cli([cmd, '--config', path.join(tmp, 'absent.json'), '--namespace', 'kubevirt'], v);
        assert.equal(r.status, 1, r.stderr);
        assert.match(r.stderr, new RegExp(`${cmd}: refusing to start: .*${v.node === '20.20.2' ? 'Node 20\\.20\\.2' : 'OpenSSL 3\\.0\\.19'}.*MM_ALLOW_UNSUPPORTED_TLS_STACK=1`));
        assert.doesNotMatch(r.stderr, /absent\.json/); // refused before the config is read
      }
    });

    it(`${cmd} with MM_ALLOW_UNSUPPORTED_TLS_STACK=1 warns and goes on; on the real stack it says nothing of it`, () => {
      const warned = cli([cmd, '--config', path.join(tmp, 'absent.json'), '--namespace', 'kubevirt'], { node: '24.22.3', openssl: '3.0.19' }, { MM_ALLOW_UNSUPPORTED_TLS_STACK: '1' });
      assert.match(warned.stderr, new RegExp(`WARNING: ${cmd}: OpenSSL 3\\.0\\.19 .*starting anyway`));
      assert.match(warned.stderr, /absent\.json/); // it went on to read the config (absent: that error)
      const real = cli([cmd, '--config', path.join(tmp, 'absent.json'), '--namespace', 'kubevirt']);
      assert.doesNotMatch(real.stderr, /refusing|WARNING/);
      assert.match(real.stderr, /absent\.json/);
    });
  }
});
