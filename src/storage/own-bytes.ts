// Bytes about to cross to a worker thread. A small Buffer is usually a view into Node's
// shared allocation pool (Buffer.poolSize, 64 KiB on Node 24), and postMessage copies the
// whole ArrayBuffer behind a view: a 600-byte message would cost a 64 KiB copy each way.
/** `bytes` on an ArrayBuffer of their own: the same view when it already is, else a copy. */
export const ownBytes = (bytes: Uint8Array): Uint8Array =>
  bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : new Uint8Array(bytes);
