// Readers that stop reading: what the server has written to such a client sits in memory
// until it reads or leaves. Writers wait for 'drain' before writing more (backpressure);
// this drops a connection whose reader has taken nothing for a whole stall period, so that
// what it holds is freed and its slots go back to readers who read.
import type { ServerResponse } from 'node:http';

/**
 * Destroys the response's connection when bytes stay queued for it across a whole
 * `stallMs` with no 'drain' in between (the client took nothing); `onDrop` runs first.
 * Returns the function that stops watching (also stopped when the response closes).
 */
export function dropWhenStalled(res: ServerResponse, stallMs: number, onDrop: () => void): () => void {
  const socket = res.socket;
  if (!socket || stallMs <= 0) return () => undefined;
  let drained = false;
  let queuedAtLastCheck = false;
  const onDrain = () => (drained = true);
  const check = () => {
    const queued = socket.writableLength > 0 || res.writableNeedDrain;
    if (queued && queuedAtLastCheck && !drained) {
      stop();
      onDrop();
      socket.destroy();
      return;
    }
    queuedAtLastCheck = queued;
    drained = false;
  };
  const timer = setInterval(check, stallMs);
  timer.unref();
  const stop = () => {
    clearInterval(timer);
    socket.off('drain', onDrain);
    res.off('drain', onDrain);
    res.off('close', stop);
  };
  socket.on('drain', onDrain);
  res.on('drain', onDrain);
  res.once('close', stop);
  return stop;
}
