// An inbox request with more than one Idempotency-Key line (docs/api.md §3.4). Node joins
// repeated lines with ", ", which a single key may also contain now that keys take spaces
// and commas: only the raw lines tell one key from two.
import type { FastifyRequest } from 'fastify';
import { errors, type ServiceError } from '../core/errors.js';

const INBOX_PREFIX = '/api/v1/inbox/';

/** The refusal for a request that repeats Idempotency-Key, or undefined; costs a string test otherwise. */
export function repeatedIdempotencyKey(request: FastifyRequest): ServiceError | undefined {
  const key = request.headers['idempotency-key'];
  if (typeof key !== 'string' || !key.includes(', ') || !request.url.startsWith(INBOX_PREFIX)) return undefined;
  const raw = request.raw.rawHeaders;
  let lines = 0;
  for (let i = 0; i < raw.length; i += 2) if (raw[i].toLowerCase() === 'idempotency-key') lines++;
  return lines > 1
    ? errors.invalidRequest({ message: 'Send one Idempotency-Key header, not several: which one is the key?' })
    : undefined;
}
