// The wire shapes of an address's sender (docs/api.md §3.2), in TypeBox like the rest of the
// contract (src/contract/schemas.ts): they validate requests, serialise responses, and feed the OpenAPI
// document and the client's types. A secret goes in; only their count ever comes out.
import { Type, type Static } from 'typebox';
import {
  SENDER_HEADER_MAX_LENGTH,
  SENDER_PREFIX_MAX_LENGTH,
  SENDER_SECRET_MAX_LENGTH,
  SENDER_SECRETS_MAX,
  SENDER_TOLERANCE_DEFAULT_SECONDS,
  SENDER_TOLERANCE_MAX_SECONDS,
} from '../core/limits.js';
import { PROVIDER_NAMES, type ProviderName } from './providers.js';
import { DateTime } from './schemas.js';

const Provider = Type.Unsafe<ProviderName>(
  Type.String({
    enum: [...PROVIDER_NAMES],
    description:
      'Whose signature scheme the inbox verifies: github, stripe, slack, standard_webhooks (Svix and the senders that use it), ' +
      'shopify, twilio, meta, microsoft_graph, zoom, dropbox, twitch, linear, or hmac_sha256 (generic).',
  }),
);

const Encoding = Type.Union([Type.Literal('hex'), Type.Literal('base64')]);

export const PutSenderSchema = Type.Object(
  {
    provider: Provider,
    secrets: Type.Array(Type.String({ minLength: 1, maxLength: SENDER_SECRET_MAX_LENGTH }), {
      minItems: 1,
      maxItems: SENDER_SECRETS_MAX,
      description:
        'The signing secrets, newest first (1–3, for rotation): a delivery verifies when any of them matches. Stored encrypted, never returned.',
    }),
    enforce: Type.Optional(
      Type.Boolean({
        default: true,
        description:
          'true: a delivery that does not verify is refused (401 signature_invalid), nothing stored. false: it is stored, marked unverified.',
      }),
    ),
    tolerance_seconds: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: SENDER_TOLERANCE_MAX_SECONDS,
        default: SENDER_TOLERANCE_DEFAULT_SECONDS,
        description: 'How far a signed timestamp may be from now, for the schemes that sign one.',
      }),
    ),
    verify_token: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: SENDER_SECRET_MAX_LENGTH,
        description:
          'meta only: the verify token its subscription handshake presents. Stored encrypted, never returned.',
      }),
    ),
    header: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: SENDER_HEADER_MAX_LENGTH,
        pattern: "^[A-Za-z0-9!#$%&'*+.^_`|~-]+$",
        description: 'hmac_sha256 only, required there: the header that carries the signature (case-insensitive).',
      }),
    ),
    encoding: Type.Optional({
      ...Encoding,
      default: 'hex',
      description: 'hmac_sha256 only: how the signature is written, hex (default) or base64.',
    }),
    prefix: Type.Optional(
      Type.String({
        maxLength: SENDER_PREFIX_MAX_LENGTH,
        default: '',
        description: 'hmac_sha256 only: text before the signature in the header, e.g. "sha256=" (default none).',
      }),
    ),
  },
  { title: 'PutSender', additionalProperties: false },
);
export type PutSender = Static<typeof PutSenderSchema>;

export const SenderSchema = Type.Object(
  {
    provider: Provider,
    enforce: Type.Boolean(),
    tolerance_seconds: Type.Integer(),
    secrets: Type.Integer({
      minimum: 1,
      maximum: SENDER_SECRETS_MAX,
      description: 'How many secrets are set (never the secrets).',
    }),
    updated_at: DateTime(),
    header: Type.Optional(Type.String({ description: 'hmac_sha256 only: the signature header, lower case.' })),
    encoding: Type.Optional(Encoding),
    prefix: Type.Optional(Type.String({ description: 'hmac_sha256 only.' })),
  },
  { title: 'Sender', additionalProperties: false },
);
export type Sender = Static<typeof SenderSchema>;

export const SenderResponseSchema = Type.Object(
  { sender: SenderSchema },
  { title: 'SenderResponse', additionalProperties: false },
);
export type SenderResponse = Static<typeof SenderResponseSchema>;
