// What a provider-aware inbox asks of each sender's scheme (docs/api.md §3.2): verify a
// delivery over its exact bytes, answer the provider's URL handshake, and name the event's
// type and idempotency key in the provider's own terms. Each provider is a pure function of
// the request, the address's sender settings and the clock, so it is tested without a server.

import type { ProviderName } from '../../contract/providers.js';

// The names are part of the wire contract; the providers themselves live here.
export { PROVIDER_NAMES, type ProviderName } from '../../contract/providers.js';

/** A delivery as the inbox received it. */
export interface SenderRequest {
  method: string;
  /** Header names lower-cased; a repeated header's values joined with ", " (Node's rule). */
  headers: Readonly<Record<string, string | undefined>>;
  /** The query string's parameters (the inbox's own `raw`/`type` included). */
  query: URLSearchParams;
  /** The public URL the sender called, query included (Twilio signs it). */
  url: string;
  /** The body's exact bytes (empty for a GET). */
  body: Buffer;
}

/** The generic `hmac_sha256` scheme: which header carries the signature, and how. */
export interface HmacSettings {
  /** Header name, lower-case. */
  header: string;
  encoding: 'hex' | 'base64';
  /** Text before the signature in the header (e.g. `sha256=`), or '' for none. */
  prefix: string;
}

/** An address's sender settings, with its secrets decrypted. */
export interface SenderSettings {
  /** 1–3 secrets, newest first; a delivery verifies when any of them matches. */
  secrets: readonly string[];
  /** How far a signed timestamp may be from now, for the schemes that sign one. */
  toleranceSeconds: number;
  /** Meta only: the verify token its subscription handshake must present. */
  verifyToken?: string;
  /** hmac_sha256 only. */
  hmac?: HmacSettings;
}

export type VerificationFailure = 'missing_signature' | 'mismatch' | 'stale_timestamp';

/** What the event's provider fields say, whether or not its signature verified. */
export interface ProviderEventFields {
  /** The event's type in the provider's terms, e.g. `github.push`; undefined: the inbox's default. */
  type?: string;
  /** The provider's delivery id (its retries repeat it), or undefined when it has none. */
  idempotencyKey?: string;
  /**
   * True when the signature covers the delivery id (in the signed body or signed headers), so
   * that a replay cannot change it; otherwise a verified delivery is keyed by a digest of its
   * body (policy.ts).
   */
  keySigned?: boolean;
  /**
   * The bytes to store instead of the body as received, when the body carries a sender secret
   * (Microsoft Graph's clientState); undefined: the body as received.
   */
  storedBody?: Buffer;
}

export type SenderVerdict =
  /** The provider's URL handshake: answered as given, no event stored. */
  | {
      kind: 'handshake';
      status: number;
      contentType: string;
      body: string;
    }
  /** A delivery whose signature verified. */
  | ({ kind: 'event'; verified: true } & ProviderEventFields)
  /** A delivery whose signature did not verify (a handshake that fails verification is one too). */
  | ({ kind: 'event'; verified: false; reason: VerificationFailure } & ProviderEventFields)
  /** A request this provider never sends (a GET that is not its handshake): 405. */
  | { kind: 'not_allowed' };

export interface SenderProvider {
  readonly name: ProviderName;
  /** The verdict on one request: a handshake to answer, an event (verified or not), or 405. */
  verify(request: SenderRequest, settings: SenderSettings, nowMs: number): SenderVerdict;
}
