// Request bodies. Fastify is told to hand every body over as a Buffer (bounded by the
// body limit), and each route decodes it here with the contract's rules: JSON only for
// `application/json` and `application/*+json` (415 otherwise), 400 `invalid_json` for
// bytes that do not parse. Raw capture (docs/api.md §3.1) keeps the Buffer as it is.
import type { FastifyRequest } from 'fastify';
import { errors } from '../core/errors.js';

/** The media type without parameters, lower case; undefined when absent or blank. */
export function mediaType(request: FastifyRequest): string | undefined {
  const header = request.headers['content-type'];
  const type = header?.split(';')[0].trim().toLowerCase();
  return type || undefined;
}

export function isJsonMediaType(type: string | undefined): boolean {
  return type !== undefined && /^application\/([a-z0-9.!#$&^_-]+\+)?json$/.test(type);
}

function charsetIsUtf8(request: FastifyRequest): boolean {
  const match = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(request.headers['content-type'] ?? '');
  return !match || /^utf-?8$/i.test(match[1]);
}

export function rawBody(request: FastifyRequest): Buffer {
  return Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
}

/**
 * Decodes the JSON body. `optional`: an empty body is `undefined`, and a body without any
 * Content-Type is read as JSON (create-address, docs/api.md §2). Otherwise a JSON media type
 * is required (deliver, docs/api.md §3).
 */
export function decodeJsonBody(request: FastifyRequest, { optional }: { optional: boolean }): unknown {
  const bytes = rawBody(request);
  const type = mediaType(request);
  if (bytes.length === 0 && optional) return undefined;
  const acceptable = isJsonMediaType(type) || (optional && type === undefined);
  if (!acceptable) {
    throw errors.jsonMediaTypeRequired({ type });
  }
  if (!charsetIsUtf8(request)) {
    throw errors.jsonCharsetRequired();
  }
  if (bytes.length === 0) throw errors.emptyBody();
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    throw errors.invalidJson({ reason: (error as Error).message });
  }
}
