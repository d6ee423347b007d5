// The wire shapes of credential management and address updates (rotation, view tokens,
// PATCH), in TypeBox like the rest of the contract (schemas.ts): they validate requests,
// serialise responses, and feed the OpenAPI document and the client's types.
import { Type, type Static } from 'typebox';
import { GRACE_MAX_SECONDS } from '../core/limits.js';
import { DateTime, LifetimeSeconds } from './schemas.js';

export const ReadTokenResponseSchema = Type.Object(
  {
    credentials: Type.Object(
      {
        read_token: Type.String({ pattern: '^roost_read_', description: 'The new read token, shown once.' }),
        note: Type.String(),
      },
      { additionalProperties: false },
    ),
  },
  { title: 'ReadTokenResponse', additionalProperties: false },
);
export type ReadTokenResponse = Static<typeof ReadTokenResponseSchema>;

export const RotateReadTokenSchema = Type.Object(
  {
    revoke_view_tokens: Type.Optional(
      Type.Boolean({
        description:
          'Also revoke every view token of the address, in the same change (without it, view tokens keep working).',
      }),
    ),
  },
  { title: 'RotateReadToken', additionalProperties: false },
);
export type RotateReadToken = Static<typeof RotateReadTokenSchema>;

export const RotateInboxSecretSchema = Type.Object(
  {
    grace_seconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: GRACE_MAX_SECONDS,
        default: 0,
        description: 'How long the old inbox URL keeps accepting deliveries (0: it stops at once).',
      }),
    ),
  },
  { title: 'RotateInboxSecret', additionalProperties: false },
);
export type RotateInboxSecret = Static<typeof RotateInboxSecretSchema>;

export const InboxSecretResponseSchema = Type.Object(
  {
    endpoints: Type.Object(
      { inbox_url: Type.String({ format: 'uri', description: 'The new inbox URL; give it to the sender.' }) },
      { additionalProperties: false },
    ),
  },
  { title: 'InboxSecretResponse', additionalProperties: false },
);
export type InboxSecretResponse = Static<typeof InboxSecretResponseSchema>;

export const CreateViewTokenSchema = Type.Object(
  {
    label: Type.Optional(Type.String({ maxLength: 100, description: 'Whom or what the token is for.' })),
    expires_in_seconds: Type.Optional(
      LifetimeSeconds('Lifetime of the token (none: it lasts as long as the address).'),
    ),
  },
  { title: 'CreateViewToken', additionalProperties: false },
);
export type CreateViewToken = Static<typeof CreateViewTokenSchema>;

const ViewTokenFields = {
  id: Type.String({ pattern: '^vt_' }),
  label: Type.Union([Type.String(), Type.Null()]),
  created_at: DateTime(),
  expires_at: Type.Union([DateTime(), Type.Null()], { description: 'Null: it lasts as long as the address.' }),
};

export const ViewTokenSchema = Type.Object(ViewTokenFields, { title: 'ViewToken', additionalProperties: false });
export type ViewToken = Static<typeof ViewTokenSchema>;

export const ViewTokenCreatedSchema = Type.Object(
  {
    view_token: Type.Object(
      {
        ...ViewTokenFields,
        token: Type.String({ pattern: '^roost_view_', description: 'Shown once: read-only bearer token.' }),
      },
      { additionalProperties: false },
    ),
  },
  { title: 'ViewTokenCreated', additionalProperties: false },
);
export type ViewTokenCreated = Static<typeof ViewTokenCreatedSchema>;

export const ViewTokenListSchema = Type.Object(
  { view_tokens: Type.Array(ViewTokenSchema) },
  { title: 'ViewTokenList', additionalProperties: false },
);
export type ViewTokenList = Static<typeof ViewTokenListSchema>;

export const UpdateAddressSchema = Type.Object(
  {
    name: Type.Optional(Type.String({ maxLength: 100, description: 'Human-readable purpose.' })),
    task_id: Type.Optional(
      Type.Union([Type.String({ maxLength: 200 }), Type.Null()], { description: 'null removes it.' }),
    ),
    expires_in_seconds: Type.Optional(
      Type.Union([LifetimeSeconds('Seconds from now.'), Type.Null()], {
        description:
          'New lifetime counted from now; null removes the lifetime where the service allows addresses without one.',
      }),
    ),
  },
  { title: 'UpdateAddress', additionalProperties: false, minProperties: 1 },
);
export type UpdateAddress = Static<typeof UpdateAddressSchema>;
