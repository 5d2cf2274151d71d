/**
 * Bandwidth budgets per peer (config `bandwidth`, or the peer's own `peers[].bandwidth`, issue 52 item 3): one
 * native budget per peer cluster at that peer's rate, shared by every tunnel this gateway relays toward that peer;
 * each relay counts against it the bytes it writes to the tunnel socket (native/budget.c: token bucket split fairly
 * between the tunnels). Only the native splice relay enforces it (plaintext and mtls-splice tunnels): the gateway refuses a budget on any other data path.
 */
import { type ProxyConfig, peerBandwidth } from './config';
import type { BudgetHandle, NativeAddon } from './native';

interface PeerBudget { rate: number; handle: BudgetHandle }

export class PeerBudgets {
  private readonly byPeer = new Map<string, PeerBudget>();

  constructor(private readonly native: NativeAddon | undefined, private readonly cfg: () => ProxyConfig) {}

  /**
   * The budget for a new tunnel to/from `peer`, or null without one. A reload that changes the rate gives new
   * tunnels a new budget; running tunnels keep theirs until they end.
   */
  for(peer: string): BudgetHandle | null {
    const rate = peerBandwidth(this.cfg(), peer);
    if (rate === undefined) { this.byPeer.delete(peer); return null; }
    if (!this.native) throw new Error('bandwidth is set but the native addon is not in use: nothing would enforce it');
    const had = this.byPeer.get(peer);
    if (had && had.rate === rate) return had.handle;
    const b = { rate, handle: this.native.budgetCreate(rate) };
    this.byPeer.set(peer, b);
    return b.handle;
  }

  /** Per peer with a budget: its rate (bytes/s) and the bytes sent under it so far (read at scrape time). */
  snapshot(): { peer: string; rate: number; sent: number }[] {
    const cfg = this.cfg();
    // reloaded without a budget toward a peer: none to report for it
    for (const peer of [...this.byPeer.keys()]) if (peerBandwidth(cfg, peer) === undefined) this.byPeer.delete(peer);
    return [...this.byPeer].map(([peer, b]) => ({ peer, rate: b.rate, sent: this.native!.budgetSent(b.handle) }));
  }
}
