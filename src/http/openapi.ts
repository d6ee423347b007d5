// /api/v1/openapi.json: @fastify/swagger turns the route schemas into OpenAPI 3.1, and this
// module finishes the document for the tools that consume it (generated clients, Prism,
// linters): the shapes become named components, and what a route schema cannot say — an
// optional body, the headers and content types each answer carries, the statuses every
// route may send, the form of ids in paths — is added here, in one place.
import swagger, { type SwaggerTransformObject } from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import { CALLBACK_SECRET_PREFIX, INGRESS_SECRET_PREFIX } from '../core/secrets.js';
import { EmailDataSchema, RawCaptureDataSchema } from '../contract/schemas.js';

type Node = { [key: string]: unknown };
type Operation = Node & { operationId: string; responses: Record<string, Node>; parameters?: Node[] };

const SCHEMAS = '#/components/schemas/';
const ref = (name: string) => ({ $ref: `${SCHEMAS}${name}` });
const isNode = (value: unknown): value is Node => value !== null && typeof value === 'object' && !Array.isArray(value);
/** As plain JSON: TypeBox's own markers stay out of the document. */
const plain = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

/**
 * The shapes of `data` that Roost itself writes (raw capture, email), offered as
 * alternatives of Event.data beside any JSON value. Documentation only: the route schemas
 * also serialise responses, and a union there would be tried alternative by alternative on
 * every delivery.
 */
const DATA_SHAPES = [
  ref('RawCaptureData'),
  ref('EmailData'),
  { description: 'Any other JSON value: what the sender put in data.' },
];

/** Response headers, as components.headers, referenced from each answer that carries them. */
const HEADERS: Record<string, Node> = {
  'RateLimit-Limit': {
    description: 'Creations allowed per period from this client (ROOST_CREATE_RATE).',
    schema: { type: 'integer', minimum: 0 },
  },
  'RateLimit-Remaining': {
    description: 'Creations this client may still make now.',
    schema: { type: 'integer', minimum: 0 },
  },
  'RateLimit-Reset': {
    description: 'Seconds until the bucket is full again.',
    schema: { type: 'integer', minimum: 0 },
  },
  'Retry-After': { description: 'Whole seconds to wait before retrying.', schema: { type: 'integer', minimum: 1 } },
  'WWW-Authenticate': {
    description: 'The Bearer challenge: send the read token as "Authorization: Bearer roost_read_…".',
    schema: { type: 'string' },
  },
  'Cache-Control': {
    description: 'no-store: the answer holds a secret or events, which no cache may keep.',
    schema: { type: 'string', enum: ['no-store'] },
  },
  Location: { description: 'The path of the created address.', schema: { type: 'string' } },
  Allow: { description: 'The methods this path takes.', schema: { type: 'string' } },
  'Content-Disposition': {
    description: 'attachment, with the file name.',
    schema: { type: 'string' },
  },
};
const header = (name: string) => ({ [name]: { $ref: `#/components/headers/${name}` } });
const rateLimitHeaders = {
  ...header('RateLimit-Limit'),
  ...header('RateLimit-Remaining'),
  ...header('RateLimit-Reset'),
};

/** Headers by status, for every operation that answers it. */
const HEADERS_BY_STATUS: Record<string, Node> = {
  '401': header('WWW-Authenticate'),
  '405': header('Allow'),
  '429': header('Retry-After'),
  '503': header('Retry-After'),
};

/** How path parameters are formed: documentation only, since a malformed id answers 404 as an unknown one does. */
const PATH_PATTERNS: Record<string, string> = {
  addressId: '^addr_[A-Za-z0-9_-]+$',
  eventId: '^evt_[A-Za-z0-9_-]+$',
  secret: `^${INGRESS_SECRET_PREFIX}[A-Za-z0-9_-]+$`,
  tokenId: '^vt_[A-Za-z0-9_-]+$',
  callbackId: '^cb_[A-Za-z0-9_-]+$',
  callbackSecret: `^${CALLBACK_SECRET_PREFIX}[A-Za-z0-9_-]+$`,
};

const TAGS = [
  { name: 'Addresses', description: 'Create, read, update and delete return addresses.' },
  { name: 'Events', description: 'Read the queue by cursor (long-poll or stream) and acknowledge events.' },
  { name: 'Inbox', description: 'Where remote services deliver: the secret inbox URL.' },
  { name: 'Credentials', description: 'Rotate the read token and the inbox secret; view tokens.' },
  { name: 'Senders', description: "Verify a provider's webhook signatures on the inbox." },
  { name: 'Email', description: 'The raw message and the attachments of email events.' },
  { name: 'Callbacks', description: 'One-shot callback URLs, answered by machines and people, and waits on them.' },
];

interface OperationFacts {
  tag: string;
  /** The JSON body may be left out (none at all is the same as {}). */
  optionalBody?: boolean;
  /** Headers added to the answers of these statuses ('*': all of them). */
  headers?: Record<string, Node>;
  /** Each answer of these statuses has this content instead of JSON. */
  content?: Record<string, Node>;
}

const binary = (description: string) => ({
  schema: { type: 'string', contentMediaType: 'application/octet-stream', description },
});
/** A sender's URL handshake, answered as its provider documents it: the challenge echoed as text… */
const TEXT_HANDSHAKE = {
  'text/plain': {
    schema: { type: 'string', description: 'The challenge echoed (Meta, Dropbox, Slack, Twitch, Microsoft Graph).' },
  },
};
/** …or Zoom's endpoint validation, in JSON (a component, so that a client can tell it from a delivery). */
const ZOOM_HANDSHAKE = {
  type: 'object',
  title: 'ZoomHandshake',
  description: "Zoom's endpoint validation answered: the plain token and its HMAC under the sender's secret.",
  properties: { plainToken: { type: 'string' }, encryptedToken: { type: 'string' } },
  required: ['plainToken', 'encryptedToken'],
  additionalProperties: false,
};

const noStore = header('Cache-Control');
const OPERATIONS: Record<string, OperationFacts> = {
  createAddress: {
    tag: 'Addresses',
    optionalBody: true,
    headers: { '*': rateLimitHeaders, '201': { ...header('Location'), ...noStore } },
  },
  getAddress: { tag: 'Addresses' },
  updateAddress: { tag: 'Addresses' },
  deleteAddress: { tag: 'Addresses' },
  rotateReadToken: { tag: 'Credentials', headers: { '200': noStore } },
  rotateInboxSecret: { tag: 'Credentials', optionalBody: true, headers: { '200': noStore } },
  createViewToken: { tag: 'Credentials', optionalBody: true, headers: { '201': noStore } },
  listViewTokens: { tag: 'Credentials' },
  revokeViewToken: { tag: 'Credentials' },
  putSender: { tag: 'Senders', headers: { '200': noStore } },
  getSender: { tag: 'Senders' },
  clearSender: { tag: 'Senders' },
  listEvents: { tag: 'Events', headers: { '*': noStore } },
  ackEvent: { tag: 'Events', headers: { '*': noStore } },
  ackEvents: { tag: 'Events', headers: { '*': noStore } },
  streamEvents: { tag: 'Events' },
  getEmailAttachment: {
    tag: 'Email',
    headers: { '200': header('Content-Disposition') },
    content: { '200': { '*/*': binary('The attachment’s bytes; Content-Type is its declared type.') } },
  },
  getEmailRaw: {
    tag: 'Email',
    headers: { '200': header('Content-Disposition') },
    content: { '200': { 'message/rfc822': binary('The message exactly as received.') } },
  },
  deliverEvent: { tag: 'Inbox', headers: { '200': noStore } },
  answerInboxHandshake: { tag: 'Inbox', headers: { '200': noStore }, content: { '200': TEXT_HANDSHAKE } },
  createCallback: { tag: 'Callbacks', optionalBody: true, headers: { '*': noStore } },
  listCallbacks: { tag: 'Callbacks', headers: { '*': noStore } },
  getCallback: { tag: 'Callbacks', headers: { '*': noStore } },
  cancelCallback: { tag: 'Callbacks', headers: { '*': noStore } },
  deliverToCallback: { tag: 'Callbacks' },
  showCallbackQuestion: { tag: 'Callbacks', headers: { '200': noStore } },
};

/**
 * Every route may answer these, before or beside what it does itself: a request Node's HTTP
 * parser refuses (400, 408 too slow, 431 headers too large), a connection beyond the
 * per-client cap (429), a crash (500), storage unreachable or the service shutting down (503).
 */
const ALWAYS = ['400', '408', '429', '431', '500', '503'];
/** Any request with a body may be too large, whatever the route does with it. */
const WITH_BODY = new Set(['post', 'put', 'patch']);

/**
 * Every titled schema (TypeBox `title`) becomes components.schemas[title] and is replaced by
 * a $ref, bottom-up, so that nested shapes (Address in CreateAddressResponse) are named too.
 * Two different shapes under one name are a bug in the schemas: refused at once.
 */
function nameComponents(document: Node, named: Record<string, Node>): Node {
  const visit = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(visit);
    if (!isNode(node)) return node;
    const out: Node = {};
    for (const [key, value] of Object.entries(node)) out[key] = visit(value);
    // Event.data offers the shapes Roost writes (identified by the fields beside it).
    const properties = out.properties as Node | undefined;
    if (properties && isNode(properties.data) && properties.sequence !== undefined)
      out.properties = { ...properties, data: { ...properties.data, anyOf: DATA_SHAPES } };
    if (typeof out.title !== 'string') return out;
    const name = out.title;
    const held = named[name];
    if (held && JSON.stringify(held) !== JSON.stringify(out))
      throw new Error(`OpenAPI: two different schemas are titled ${name}`);
    named[name] = out;
    return ref(name);
  };
  return visit(document) as Node;
}

function finishOperation(method: string, operation: Operation): void {
  const facts = OPERATIONS[operation.operationId];
  if (!facts) throw new Error(`OpenAPI: no facts for operation ${operation.operationId}`);
  operation.tags = [facts.tag];
  const body = operation.requestBody as Node | undefined;
  if (body && facts.optionalBody) body.required = false;
  for (const parameter of operation.parameters ?? []) {
    const pattern = PATH_PATTERNS[String(parameter.name)];
    if (parameter.in === 'path' && pattern) parameter.schema = { ...(parameter.schema as Node), pattern };
  }
  const { responses } = operation;
  const bearer = ((operation.security ?? []) as Node[]).some((scheme) => 'bearer' in scheme);
  const extra = [...ALWAYS, ...(WITH_BODY.has(method) ? ['413'] : [])];
  for (const status of extra) responses[status] ??= { description: describeStatus(status), content: errorContent() };
  for (const [status, response] of Object.entries(responses)) {
    // @fastify/swagger's placeholder, for a route schema that gave no description.
    if (response.description === 'Default Response') response.description = describeStatus(status);
    // The inbox's 401 is a signature that did not verify: no Bearer challenge there.
    const byStatus = status === '401' && !bearer ? {} : HEADERS_BY_STATUS[status];
    const headers = { ...byStatus, ...facts.headers?.['*'], ...facts.headers?.[status] };
    if (Object.keys(headers).length) response.headers = { ...(response.headers as Node), ...headers };
    const content = facts.content?.[status];
    if (content) response.content = content;
  }
}

const errorContent = () => ({ 'application/json': { schema: ref('Error') } });

const STATUS_TEXT: Record<string, string> = {
  '200': 'OK.',
  '201': 'Created.',
  '202': 'Accepted: the event is durable.',
  '204': 'Done; no body.',
  '410': 'This callback expired or was cancelled.',
  '400': 'Invalid request (the message names the field).',
  '401': 'Missing, malformed or wrong bearer token (or, on the inbox, a signature that does not verify).',
  '403': 'A view token may not do this.',
  '404': 'No such address, event, inbox, token or callback.',
  '405': 'Method not allowed.',
  '408': 'The request did not arrive in time.',
  '409': 'Too many view tokens, or waiting callbacks.',
  '413': 'The body is larger than ROOST_MAX_BODY_BYTES.',
  '415': 'The body is not JSON.',
  '429': 'Too many requests or connections from this client (see Retry-After).',
  '431': 'The request line and headers are too large.',
  '500': 'Internal error (no details).',
  '503': 'Storage unreachable or the service shutting down; retry shortly.',
};
const describeStatus = (status: string) => STATUS_TEXT[status] ?? 'Answer.';

/** The deliver operation: a CreateEvent in JSON, or with ?raw=1 or a sender any body at all. */
function finishDelivery(operation: Operation): void {
  const body = operation.requestBody as { content: Record<string, Node> };
  // JSON too may be of any shape then: a typed client still has the CreateEvent component.
  const createEvent = body.content['application/json'].schema;
  body.content['application/json'] = {
    schema: {
      anyOf: [
        createEvent,
        { description: 'With ?raw=1, or on an inbox with a sender: JSON of any shape, stored as sent.' },
      ],
    },
  };
  body.content['*/*'] = {
    schema: {
      description:
        'With ?raw=1, or on an inbox with a sender: any body, of any Content-Type (JSON of any shape included), stored as sent.',
    },
  };
  // A sender's POST handshakes (Slack, Zoom, Twitch, Microsoft Graph) are answered with 200 too.
  const ok = operation.responses['200'];
  const json = (ok.content as Record<string, Node>)['application/json'];
  ok.content = {
    'application/json': { schema: { anyOf: [json.schema, ZOOM_HANDSHAKE] } },
    ...TEXT_HANDSHAKE,
  };
  ok.description = 'A repeated delivery (duplicate: true), or with a sender its URL handshake answered.';
}

/** A callback's question: JSON, or with Accept: text/html the page a person answers on. */
function finishCallbackPage(operation: Operation): void {
  const ok = operation.responses['200'];
  ok.content = {
    ...(ok.content as Node),
    'text/html': { schema: { type: 'string', description: 'The page a person answers on (no script, strict CSP).' } },
  };
}

/** The `unacked` flag as the docs advertise it: 1 or true, 0 or false. */
function finishListQuery(operation: Operation): void {
  const unacked = operation.parameters?.find((p) => p.in === 'query' && p.name === 'unacked');
  if (unacked) unacked.schema = { type: 'string', enum: ['1', 'true', '0', 'false'], default: '0' };
}

/** The named shapes that only requests use (bodies), never an answer. */
function requestOnlyShapes(paths: Node): string[] {
  const inRequests = new Set<string>();
  const inAnswers = new Set<string>();
  const collect = (node: unknown, into: Set<string>) => {
    const text = JSON.stringify(node) ?? '';
    for (const match of text.matchAll(/"#\/components\/schemas\/([A-Za-z]+)"/g)) into.add(match[1]);
  };
  for (const methods of Object.values(paths) as Node[]) {
    for (const operation of Object.values(methods) as Operation[]) {
      collect(operation.requestBody, inRequests);
      collect(operation.responses, inAnswers);
    }
  }
  return [...inRequests].filter((name) => !inAnswers.has(name));
}

/**
 * A request shape's defaults are said in its descriptions, not with `default`: a generator
 * such as openapi-typescript reads `default` in a named component as "always present" and
 * would make a client send every defaulted field. Roost applies them itself (docs/api.md).
 */
function defaultsToDescriptions(shape: Node | undefined): void {
  for (const property of Object.values((shape?.properties ?? {}) as Record<string, Node>)) {
    if (!('default' in property)) continue;
    const said = typeof property.description === 'string' ? property.description : '';
    if (!/default/i.test(said))
      property.description = `${said}${said ? ' ' : ''}Default: ${JSON.stringify(property.default)}.`;
    delete property.default;
  }
}

/** Returns the document generated from the routes, finished as this module's header says. */
export function finishDocument(generated: Node): Node {
  const document = plain(generated);
  const paths = document.paths as Record<string, Record<string, Operation>>;
  // MCP speaks JSON-RPC over Streamable HTTP: docs/mcp.md describes it, this document does not.
  for (const path of Object.keys(paths)) if (path === '/mcp' || path.startsWith('/mcp/')) delete paths[path];
  for (const methods of Object.values(paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      finishOperation(method, operation);
      if (operation.operationId === 'deliverEvent') finishDelivery(operation);
      if (operation.operationId === 'listEvents') finishListQuery(operation);
      if (operation.operationId === 'showCallbackQuestion') finishCallbackPage(operation);
    }
  }
  const named: Record<string, Node> = {};
  document.paths = nameComponents(paths, named);
  nameComponents(plain({ RawCaptureData: RawCaptureDataSchema, EmailData: EmailDataSchema }), named);
  for (const name of requestOnlyShapes(document.paths as Node)) defaultsToDescriptions(named[name]);
  const schemas = Object.fromEntries(Object.entries(named).sort(([a], [b]) => a.localeCompare(b)));
  document.components = { ...(document.components as Node), schemas, headers: HEADERS };
  document.tags = TAGS;
  return document;
}

export async function registerOpenApi(app: FastifyInstance, config: Config): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Roost',
        version: '0.1.0',
        license: { name: 'MIT', identifier: 'MIT' },
        contact: { name: 'Roost' },
        description:
          'Return addresses for software agents: an email address, a secret inbox URL and a durable, ordered, long-pollable event queue read with a bearer token. ' +
          'The MCP endpoints (/mcp and each address’s mcp_url) speak JSON-RPC over Streamable HTTP and are described in docs/mcp.md, not here.',
      },
      servers: [{ url: config.baseUrl }],
      components: {
        securitySchemes: {
          bearer: {
            type: 'http',
            scheme: 'bearer',
            description:
              'The read token (roost_read_…) from the creation response, or a view token (roost_view_…) to read.',
          },
        },
      },
    },
    transformObject: (documentObject) =>
      finishDocument((documentObject as { openapiObject: Node }).openapiObject) as ReturnType<SwaggerTransformObject>,
  });
}
