/**
 * Issue 14, item 5, for mtls-splice: a gateway that dies while the payload is spliced raw after the BIND exchange
 * (PROTOCOL.md section 8) is a cut stream, so the in-cluster ends see an RST, never a FIN, every time. The peers are
 * real gateways (the handshake and BIND are theirs); a TCP link between them plays the death (dyingLink): the dead
 * side's kernel ends the tunnel with an RST. Why only RSTs: once spliced there is no close_notify, so a FIN on the
 * tunnel is a half-close by design and is propagated as one (PROTOCOL.md section 1, "Forced ends"); a dying
 * gateway's kernel never sends that FIN because each gateway sets SO_LINGER {1, 0} on its spliced tunnel socket.
 * (A link that FINs first shows FIN then RST at the in-cluster end, as documented for injected FINs in section 8.)
 * Ends are judged by endOf (the kernel's word, not Node's 'end' alone).
 */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { before, describe, it } from 'node:test';
import { startGateway } from '../gateway';
import { chatter, chattyServer, dyingLink, endOf, type Death, type End } from '../testkit/dying-peers';
import { configFor } from '../testkit/gateways';
import { HANG_GUARD_MS, makePki, silent, sleep, withTimeout, type Pki } from '../testkit/helpers';

let pki: Pki;
before(() => { pki = makePki('fleet', ['east', 'west']); });

const ROUNDS = 300;
const DEATHS: Death[] = ['rst'];

/** How many of `ends` there are of each kind, once `count` of them exist (bounded waits). */
async function tallyOf(ends: Promise<End>[], count: number): Promise<Record<string, number>> {
  for (const end = Date.now() + HANG_GUARD_MS; Date.now() < end && ends.length < count;) await sleep(10);
  const tally: Record<string, number> = {};
  for (const e of await withTimeout(Promise.all(ends), HANG_GUARD_MS, 'ends')) tally[e] = (tally[e] ?? 0) + 1;
  return tally;
}

describe('mtls-splice: a dying peer gateway is a reset, every time', { timeout: 5 * HANG_GUARD_MS }, () => {
  for (const dies of ['west', 'east'] as const) {
    const what = dies === 'west' ? 'far-end (terminus) deaths, seen at the client' : 'origin deaths, seen at the destination';
    it(`${ROUNDS} ${what}, mid-splice (rst) -> RSTs at client and destination, 0 FINs`, async () => {
      let k = 0;
      const server = await chattyServer();
      const cfgW = await configFor('west', 'east', 1, 'mtls-splice', pki);
      const west = await startGateway(cfgW, { logger: silent, unsafeAllowLoopbackDestinations: true });
      const link = await dyingLink(cfgW.listen!.tunnel!.port, dies, () => DEATHS[k++ % DEATHS.length]);
      const cfgE = await configFor('east', 'west', link.port, 'mtls-splice', pki);
      const east = await startGateway(cfgE, { logger: silent, originalDestination: () => ({ host: '127.0.0.1', port: server.port }) });
      const clientEnds: Promise<End>[] = [];
      try {
        for (let done = 0; done < ROUNDS; done += 10) {
          const batch = Array.from({ length: 10 }, () => {
            const c = net.connect({ port: cfgE.listen!.intercept!.port, host: '127.0.0.1', allowHalfOpen: true });
            chatter(c);
            return endOf(c);
          });
          clientEnds.push(...batch);
          await withTimeout(Promise.all(batch), HANG_GUARD_MS, 'batch');
        }
        assert.equal(k, ROUNDS, 'every connection reached the spliced payload and its peer died there');
        const verdict = { client: await tallyOf(clientEnds, ROUNDS), destination: await tallyOf(server.ends, ROUNDS) };
        assert.deepEqual(verdict, { client: { RST: ROUNDS }, destination: { RST: ROUNDS } });
      } finally { await east.close(); await west.close(); link.close(); server.close(); }
    });
  }
});
