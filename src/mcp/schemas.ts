// The zod schemas of the MCP tools (docs/api.md §7). The MCP SDK wants zod, but the wire
// shapes are written once, in TypeBox (src/contract/): the shared ones are converted
// from there, so that the tools carry exactly the REST bounds and fields. Only the
// MCP-specific arguments (address_id, read_token, ack's choice) are written here.
import { z } from 'zod';
import {
  CreateViewTokenSchema,
  InboxSecretResponseSchema,
  ReadTokenResponseSchema,
  RotateInboxSecretSchema,
  RotateReadTokenSchema,
  UpdateAddressSchema,
  ViewTokenCreatedSchema,
  ViewTokenListSchema,
} from '../contract/credential-schemas.js';
import { PutSenderSchema, SenderResponseSchema } from '../contract/sender-schemas.js';
import {
  AddressResponseSchema,
  CreateAddressResponseSchema,
  CreateAddressSchema,
  EventPageSchema,
  EventSchema,
  ListEventsQuerySchema,
} from '../contract/schemas.js';

type JsonSchema = { [key: string]: unknown };

const FORMAT_WORDS: Record<string, string> = {
  email: 'An email address.',
  'date-time': 'An RFC 3339 UTC time with milliseconds.',
  uri: 'A URL.',
};

/**
 * A TypeBox schema as a zod object, with its string formats turned into descriptions:
 * - `email`: zod and the SDK client's Ajv both read it as "needs a dotted domain", which
 *   the default mail domain (`localhost`, docs/api.md §1) is not; the client would then
 *   reject a correct result;
 * - `date-time`: zod spells it out as a 600-character pattern in every tool listing,
 *   context an LLM client pays for on each turn;
 * - `uri`: Ajv without ajv-formats refuses to compile a schema that names a format.
 * `defaults`: whether the schema's defaults are applied to what is missing. REST applies
 * them to a query string but not to a body (http/app.ts), and the core tells a default
 * from a value given ("encoding: only for hmac_sha256"), so the tools do the same.
 */
function fromTypeBox(schema: object, options: { defaults: boolean }): z.ZodObject {
  const plain = JSON.parse(JSON.stringify(schema), (_key, value: unknown): unknown => {
    const node = value as JsonSchema;
    if (!node || typeof node !== 'object' || Array.isArray(node)) return value;
    const { format, default: fallback, ...rest } = node;
    const kept = options.defaults && fallback !== undefined ? { ...rest, default: fallback } : rest;
    const said = typeof format === 'string' ? FORMAT_WORDS[format] : undefined;
    if (said === undefined) return format === undefined ? kept : { ...kept, format };
    return { ...kept, description: typeof rest.description === 'string' ? `${said} ${rest.description}` : said };
  }) as Parameters<typeof z.fromJSONSchema>[0];
  const converted = z.fromJSONSchema(plain);
  if (!(converted instanceof z.ZodObject)) throw new Error('An MCP tool schema must be a JSON object schema.');
  return converted;
}

/**
 * A schema whose top-level members carry these descriptions instead of their own (none for
 * a member left out, nor inside one): tools/list is read by a model on every turn, so the
 * words a REST reader needs are cut down to what the tool's description does not already say.
 */
function describedAs(schema: object, descriptions: Record<string, string> = {}): object {
  const plain = JSON.parse(JSON.stringify(schema), (key, value: unknown) =>
    key === 'description' && typeof value === 'string' ? undefined : value,
  ) as { properties: Record<string, JsonSchema> };
  for (const [name, member] of Object.entries(plain.properties)) {
    if (descriptions[name] !== undefined) member.description = descriptions[name];
  }
  return plain;
}

/** A request body's schema as a tool's arguments: nothing filled in (see fromTypeBox). */
const fromBody = (schema: object) => fromTypeBox(schema, { defaults: false });
/** A response's schema as a tool's result. */
const fromResponse = (schema: object) => fromTypeBox(schema, { defaults: false });

// Said once, in the server's instructions (mcp/server.ts), not in every tool's schema.
const readToken = z.string().optional();

/** On `/mcp` the address tools name their address; on `/mcp/{addressId}` it is implied. */
export function addressArguments(bound: boolean) {
  // No minLength: an empty id or token is refused as not found or unauthorized, and the
  // four bytes it would cost are repeated in every tool of the list.
  const addressId = z.string();
  return { address_id: bound ? addressId.optional() : addressId, read_token: readToken };
}

export const createInput = fromBody(describedAs(CreateAddressSchema)).strict();

export function getInput(bound: boolean) {
  return z.strictObject(addressArguments(bound));
}

export function pollInput(bound: boolean) {
  // The tool's description says what each argument does; the containment filters are
  // JSON values here (a query string carries them as text).
  const json = z.unknown().optional();
  return fromTypeBox(describedAs(ListEventsQuerySchema), { defaults: true })
    .extend({
      data_contains: json,
      body_contains: json,
    })
    .extend(addressArguments(bound))
    .strict();
}

export function ackInput(bound: boolean) {
  return z.strictObject({
    ...addressArguments(bound),
    // The tool's description says what each one does.
    event_id: z.string().min(1).optional(),
    up_to_sequence: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
  });
}

export function deleteInput(bound: boolean) {
  return z.strictObject(addressArguments(bound));
}

export const createOutput = fromResponse(CreateAddressResponseSchema);
export const addressOutput = fromResponse(AddressResponseSchema);

const event = fromResponse(EventSchema);

export const pollOutput = fromResponse(EventPageSchema);

// One object with optional members, not a union: MCP requires an object at the root.
export const ackOutput = z.strictObject({
  event: event.describe('The acknowledged event (when event_id was given).').optional(),
  acknowledged: z
    .number()
    .int()
    .min(0)
    .describe('How many events this call newly acknowledged (when up_to_sequence was given).')
    .optional(),
  up_to_sequence: z
    .number()
    .int()
    .min(1)
    .describe('The sequence acknowledged up to (when up_to_sequence was given).')
    .optional(),
});

export const deleteOutput = z.strictObject({
  deleted: z.literal(true),
  address_id: z.string().describe('The deleted return address; its events, read token and inbox URL are gone.'),
});

// --- credentials and updates (docs/api.md §5) ---------------------------------------------

export function rotateReadInput(bound: boolean) {
  return fromBody(describedAs(RotateReadTokenSchema)).extend(addressArguments(bound)).strict();
}

export function rotateInboxInput(bound: boolean) {
  return fromBody(describedAs(RotateInboxSecretSchema)).extend(addressArguments(bound)).strict();
}

export function createViewTokenInput(bound: boolean) {
  return fromBody(describedAs(CreateViewTokenSchema)).extend(addressArguments(bound)).strict();
}

export function revokeViewTokenInput(bound: boolean) {
  return z.strictObject({
    ...addressArguments(bound),
    view_token_id: z.string().min(1),
  });
}

export function updateInput(bound: boolean) {
  // minProperties counts address_id and read_token here: the service checks for a change instead.
  return fromBody(describedAs({ ...UpdateAddressSchema, minProperties: undefined }))
    .extend(addressArguments(bound))
    .strict();
}

export const readTokenOutput = fromResponse(ReadTokenResponseSchema);
export const inboxSecretOutput = fromResponse(InboxSecretResponseSchema);
export const viewTokenCreatedOutput = fromResponse(ViewTokenCreatedSchema);
export const viewTokenListOutput = fromResponse(ViewTokenListSchema);
export const revokeOutput = z.strictObject({
  revoked: z.literal(true),
  view_token_id: z.string().describe('The revoked view token; it stopped at once.'),
});

// --- senders (docs/api.md §3.2) -------------------------------------------------------------

export function configureSenderInput(bound: boolean) {
  return fromBody(
    describedAs(PutSenderSchema, {
      enforce: 'Default true: refuse what does not verify; false: store it marked unverified.',
      tolerance_seconds: 'Default 300: how far a signed timestamp may be from now.',
      verify_token: 'meta only: its handshake token.',
      header: 'hmac_sha256 only, required there: the signature header.',
      encoding: 'hmac_sha256 only; default hex.',
      prefix: 'hmac_sha256 only: text before the signature, e.g. "sha256=".',
    }),
  )
    .extend(addressArguments(bound))
    .strict();
}

export const senderOutput = fromResponse(SenderResponseSchema);
export const clearSenderOutput = z.strictObject({
  cleared: z.literal(true),
  address_id: z.string().describe('The return address whose inbox no longer verifies a sender.'),
});
