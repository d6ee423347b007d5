// The cap on open HTTP connections per peer address (ROOST_MAX_CONNECTIONS_PER_IP). It is
// counted on sockets, before any request is parsed, so it keys by the TCP peer: behind a
// reverse proxy that is the proxy itself, for all its clients together.
import { STATUS_CODES, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { errors } from '../core/errors.js';

/**
 * Answers a connection beyond the cap with 429 `too_many_connections` (in the Error shape,
 * with Retry-After) and closes it; `onRefused` counts it.
 */
export function limitConnectionsPerPeer(server: Server, max: number, onRefused: () => void): void {
  if (max <= 0) return;
  const open = new Map<string, number>();
  // Node's own listener (which attaches the HTTP parser) runs only for admitted sockets.
  const admitted = server.listeners('connection') as Array<(socket: Socket) => void>;
  server.removeAllListeners('connection');
  server.on('connection', (socket: Socket) => {
    const peer = socket.remoteAddress ?? '';
    const count = open.get(peer) ?? 0;
    if (count >= max) {
      onRefused();
      refuse(socket, max);
      return;
    }
    for (const listener of admitted) listener.call(server, socket);
    open.set(peer, count + 1);
    socket.once('close', () => {
      const left = (open.get(peer) ?? 1) - 1;
      if (left <= 0) open.delete(peer);
      else open.set(peer, left);
    });
  });
}

function refuse(socket: Socket, max: number): void {
  const refusal = errors.tooManyConnections({ max });
  const body = JSON.stringify(refusal.toJSON());
  const headers = Object.entries(refusal.headers).map(([name, value]) => `${name}: ${value}\r\n`);
  // The socket never reaches the HTTP parser: the answer is written here, then it is
  // closed. What the client sent is read and dropped, so that closing does not reset the
  // connection before the answer is read.
  socket.on('error', () => undefined);
  socket.resume();
  socket.setTimeout(1000, () => socket.destroy());
  socket.end(
    `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n${headers.join('')}\r\n${body}`,
  );
}
