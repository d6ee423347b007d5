// The tool calls in progress, so that a `notifications/cancelled` reaching another request
// of the stateless transport (and so another server instance) still ends the call it names
// (MCP "Cancellation": stop, free resources, send no response). A call is found by its
// JSON-RPC id and the caller's credential: ids are only unique per client.
import { createHash } from 'node:crypto';

type RequestId = string | number;

/** The caller a request id belongs to: its Authorization header, or without one its IP. */
export function callerKey(authorization: string | undefined, clientIp: string): string {
  // Hashed: the map must not keep bearer tokens in memory longer than their request.
  const who = authorization === undefined ? `ip ${clientIp}` : `auth ${authorization}`;
  return createHash('sha256').update(who).digest('base64url');
}

const idKey = (caller: string, id: RequestId) => `${caller} ${typeof id} ${String(id)}`;

export class HeldCalls {
  private readonly calls = new Map<string, (reason: string | undefined) => void>();

  /** Registers a call; the returned function removes it (when its HTTP request ends). */
  add(caller: string, id: RequestId, cancel: (reason: string | undefined) => void): () => void {
    const key = idKey(caller, id);
    // A client reusing an id while its first call runs: the newer one is the one it can name.
    this.calls.set(key, cancel);
    return () => {
      if (this.calls.get(key) === cancel) this.calls.delete(key);
    };
  }

  /** Ends the caller's call with this id, if one is in progress; says whether one was. */
  cancel(caller: string, id: RequestId, reason: string | undefined): boolean {
    const key = idKey(caller, id);
    const cancel = this.calls.get(key);
    if (!cancel) return false;
    this.calls.delete(key);
    cancel(reason);
    return true;
  }

  get size(): number {
    return this.calls.size;
  }
}
