// A TCP proxy between Roost and PostgreSQL that can drop Roost's side of a connection at
// the worst moment: right after forwarding the Sync that makes the server run (and commit)
// a given statement, before its answer comes back. Roost then cannot know whether that
// statement committed — the "outcome unknown" fault of a connection dying during COMMIT.
// It can also hold back the statements that carry a given marker (a slow statement).
import { connect, createServer, type Server, type Socket } from 'node:net';

/** The extended protocol's Sync message: 'S', length 4. */
const SYNC = Buffer.from([0x53, 0, 0, 0, 4]);

export interface TcpProxy {
  port: number;
  /** The next statement whose bytes contain `marker` is sent, then Roost's side is cut. Resolves once cut. */
  cutAfterSending(marker: string): Promise<void>;
  /** From now on, bytes from Roost that contain `marker` reach the server `ms` later; what follows on their connection waits behind them. */
  delaySending(marker: string, ms: number): void;
  /**
   * From now on, when (performance.now()) each statement whose bytes contain `marker` began
   * to reach the proxy: once per statement, up to its Sync, however its messages were split.
   */
  recordArrivals(marker: string): number[];
  /** The most connections holding back a chunk with the delayed marker at one time. */
  readonly mostDelayedAtOnce: number;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  let armed: { marker: Buffer; cut: () => void } | undefined;
  let delay: { marker: Buffer; ms: number } | undefined;
  let delayed = 0;
  const recorded: Array<{ marker: Buffer; times: number[] }> = [];
  let mostDelayedAtOnce = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(targetPort, '127.0.0.1');
    sockets.add(client).add(upstream);
    let sawMarker = false;
    let cut = false;
    let sending = Promise.resolve();
    /** The recorded markers seen on this connection since its last Sync. */
    const open = new Set<Buffer>();
    client.on('data', (chunk) => {
      for (const { marker, times } of recorded) {
        if (!open.has(marker) && chunk.includes(marker)) {
          times.push(performance.now());
          open.add(marker);
        }
      }
      if (chunk.includes(SYNC)) open.clear();
      if (delay) {
        const held = chunk.includes(delay.marker) ? delay.ms : 0;
        sending = sending.then(async () => {
          if (held > 0) {
            // Counted while held: chunks of one connection are held one after the other.
            mostDelayedAtOnce = Math.max(mostDelayedAtOnce, ++delayed);
            await new Promise((resolve) => setTimeout(resolve, held));
            delayed--;
          }
          if (!upstream.destroyed) upstream.write(chunk);
        });
      } else upstream.write(chunk);
      if (armed && !sawMarker && chunk.includes(armed.marker)) sawMarker = true;
      if (sawMarker && armed && chunk.includes(SYNC)) {
        const { cut: done } = armed;
        armed = undefined;
        cut = true;
        client.destroy();
        // The server must read what was forwarded before it sees the connection close.
        setTimeout(() => upstream.destroy(), 1_000);
        done();
      }
    });
    upstream.on('data', (chunk) => {
      if (!cut) client.write(chunk);
    });
    client.on('close', () => {
      sockets.delete(client);
      if (!cut) upstream.destroy();
    });
    upstream.on('close', () => {
      sockets.delete(upstream);
      client.destroy();
    });
    client.on('error', () => {});
    upstream.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    cutAfterSending: (marker) => new Promise((resolve) => (armed = { marker: Buffer.from(marker), cut: resolve })),
    delaySending: (marker, ms) => void (delay = { marker: Buffer.from(marker), ms }),
    recordArrivals: (marker) => {
      const times: number[] = [];
      recorded.push({ marker: Buffer.from(marker), times });
      return times;
    },
    get mostDelayedAtOnce() {
      return mostDelayedAtOnce;
    },
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
