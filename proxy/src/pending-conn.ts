/**
 * Connections accepted by the tunnel listener that have not yet finished their TLS handshake and OPEN
 * header: each holds a handshake slot (bounded, so slowloris cannot exhaust the gateway) and one deadline.
 */
import type * as net from 'node:net';

export class PendingConn {
  private deadline?: NodeJS.Timeout;
  private settled = false;

  constructor(readonly raw: net.Socket, private readonly owner: PendingConns, private readonly onSettle?: () => void) {}

  /** The one deadline for TLS handshake + header: slowloris gets cut here. */
  armDeadline(ms: number, onExpire: () => void): void {
    this.deadline = setTimeout(onExpire, ms);
  }

  /** Handshake and header are over (accepted, refused, failed or closed): frees the slot, stops the deadline. Idempotent. */
  settle(): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.deadline);
    this.owner.release(this);
    this.onSettle?.();
  }

  /** A native TLS session owns the socket now: closeAll() leaves it to the session (the slot stays held). */
  handOver(): void { this.owner.forget(this); }
}

export class PendingConns {
  private slots = 0;
  /** closed by closeAll() */
  private readonly closeable = new Set<PendingConn>();

  /** Connections holding a handshake slot. */
  get count(): number { return this.slots; }

  /** Take a slot for `raw` (released by settle(), at the latest when the socket closes; then `onSettle`). */
  admit(raw: net.Socket, onSettle?: () => void): PendingConn {
    const p = new PendingConn(raw, this, onSettle);
    this.slots++;
    this.closeable.add(p);
    raw.once('close', () => p.settle());
    return p;
  }

  release(p: PendingConn): void {
    this.slots--;
    this.closeable.delete(p);
  }

  forget(p: PendingConn): void { this.closeable.delete(p); }

  /** Close every pending connection not owned by a native session. */
  closeAll(): void {
    for (const p of [...this.closeable]) { p.settle(); p.raw.destroy(); }
  }
}
