// The MCP endpoints in the Fastify app (docs/api.md §7): `POST /mcp` (the service) and
// `POST /mcp/{addressId}` (bound to one address, the `mcp_url` of a creation response),
// stateless Streamable HTTP — a new server and transport per request — behind
// an Origin and Host check against DNS rebinding.
// Protocol-level failures here are JSON-RPC errors, never the REST error shape and never
// a 5xx for a client's mistake (docs/api.md §6, last paragraph).
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { ServiceError, errors } from '../../core/errors.js';
import { HeldCalls, callerKey } from '../../mcp/held-calls.js';
import { cancelledIds, envelopeProblem, singleRequest, type JsonRpcId } from '../../mcp/jsonrpc.js';
import { originPolicy, type OriginPolicy } from '../../mcp/origins.js';
import { isJsonMediaType, mediaType, rawBody } from '../body.js';
import { AddressParamsSchema } from './addresses.js';
import { clientGone, optionalBearerSecurity } from './common.js';
import { clientKey } from '../client-ip.js';

/** JSON-RPC 2.0's own error codes, and the SDK's "server error" for transport-level refusals. */
const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  InvalidParams: -32602,
  InternalError: -32603,
} as const;
const SERVER_ERROR = -32000;

/**
 * The MCP SDK (and zod with it) is loaded by the first MCP request, not at start: a large
 * part of the idle process, which a service that never sees an MCP client need not carry.
 */
let sdk:
  | Promise<{
      buildMcpServer: typeof import('../../mcp/server.js').buildMcpServer;
      paramsProblem: typeof import('../../mcp/server.js').paramsProblem;
      Transport: typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js').StreamableHTTPServerTransport;
    }>
  | undefined;
const loadSdk = () =>
  (sdk ??= Promise.all([
    import('../../mcp/server.js'),
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
  ]).then(([server, http]) => ({
    buildMcpServer: server.buildMcpServer,
    paramsProblem: server.paramsProblem,
    Transport: http.StreamableHTTPServerTransport,
  })));

function jsonRpcError(
  reply: FastifyReply,
  status: number,
  code: number,
  message: string,
  headers: Record<string, string> = {},
  id: JsonRpcId | null = null,
) {
  for (const [name, value] of Object.entries(headers)) reply.header(name, value);
  return reply.code(status).type('application/json').send({ jsonrpc: '2.0', error: { code, message }, id });
}

/** What a browser client may send and read across origins (CORS, for ROOST_MCP_ALLOWED_ORIGINS). */
const CORS_ALLOW_METHODS = 'POST, GET, DELETE, OPTIONS';
const CORS_ALLOW_HEADERS = 'Authorization, Content-Type, Accept, Mcp-Protocol-Version, Mcp-Session-Id, Last-Event-ID';
const CORS_EXPOSE_HEADERS = 'Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate';

/**
 * The JSON-RPC body. Fastify hands every body over as bytes (http/app.ts); a JSON one is
 * parsed here. Anything else is passed on as null: the SDK then refuses the Content-Type
 * (415) before it looks at the body.
 */
function parseBody(request: FastifyRequest): { ok: true; body: unknown } | { ok: false } {
  if (!isJsonMediaType(mediaType(request))) return { ok: true, body: null };
  try {
    return { ok: true, body: JSON.parse(rawBody(request).toString('utf8')) };
  } catch {
    return { ok: false };
  }
}

export async function mcpRoutes(app: FastifyInstance): Promise<void> {
  const { service, callbacks, metrics, config } = app.roost;

  // Failures before the SDK is reached (the body limit, mostly) in JSON-RPC form.
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof ServiceError && error.code === 'unavailable') {
      // Shutting down (http/app.ts): tell the client to retry, in JSON-RPC form.
      return jsonRpcError(reply, 503, SERVER_ERROR, error.message, error.headers);
    }
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      return jsonRpcError(reply, 413, SERVER_ERROR, errors.payloadTooLarge({ maxBytes: config.maxBodyBytes }).message);
    }
    if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
      return jsonRpcError(reply, 400, ErrorCode.InvalidRequest, 'Invalid Request: the HTTP request is malformed.');
    }
    request.log.error({ err: error }, 'MCP request failed');
    return jsonRpcError(reply, 500, ErrorCode.InternalError, 'Internal error; retry later.');
  });

  // DNS rebinding (MCP transport spec, "Security Warning"): a page on another origin, or on
  // a name rebound to this host, must not drive the tools from a browser. Requests without
  // Origin (every non-browser client) pass; a browser's Origin must be the service's own
  // or a configured one, and gets CORS headers. The Host must name the service: the base
  // URL's host, or any loopback name of its port when the service is on loopback or has no
  // base URL (mcp/origins.ts).
  let policy: { baseUrl: string; policy: OriginPolicy } | undefined;
  const currentPolicy = () => {
    // The base URL made up from the port is only known once the server listens.
    if (policy?.baseUrl !== config.baseUrl) {
      policy = {
        baseUrl: config.baseUrl,
        policy: originPolicy(config.baseUrl, config.baseUrlFromPort, config.mcpAllowedOrigins),
      };
    }
    return policy.policy;
  };
  app.addHook('onRequest', (request, reply, done) => {
    const { origin, host } = request.headers;
    const checks = currentPolicy();
    if (origin !== undefined && !checks.originAllowed(origin)) {
      metrics.refusals.inc({ code: 'forbidden_origin' });
      void jsonRpcError(
        reply,
        403,
        SERVER_ERROR,
        'Forbidden: this Origin may not use the MCP endpoint (ROOST_MCP_ALLOWED_ORIGINS).',
      );
      return;
    }
    if (!checks.hostAllowed(host)) {
      metrics.refusals.inc({ code: 'forbidden_host' });
      void jsonRpcError(
        reply,
        403,
        SERVER_ERROR,
        config.baseUrlFromPort
          ? 'Forbidden: without ROOST_BASE_URL only loopback Host names (localhost, 127.0.0.1, [::1]) are accepted.'
          : 'Forbidden: the Host header does not name this service (ROOST_BASE_URL).',
      );
      return;
    }
    if (origin !== undefined) {
      // On the raw response: the POST handler hands the response to the SDK, past Fastify's headers.
      reply.raw.setHeader('Access-Control-Allow-Origin', origin);
      reply.raw.setHeader('Access-Control-Expose-Headers', CORS_EXPOSE_HEADERS);
    }
    reply.raw.setHeader('Vary', 'Origin');
    done();
  });

  // The CORS preflight of a browser client; the hook above has refused foreign origins.
  const preflight = async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.headers.origin !== undefined) {
      reply.header('Access-Control-Allow-Methods', CORS_ALLOW_METHODS);
      reply.header('Access-Control-Allow-Headers', CORS_ALLOW_HEADERS);
      reply.header('Access-Control-Max-Age', '600');
    }
    return reply.code(204).header('Allow', CORS_ALLOW_METHODS).send();
  };

  // Calls in progress, so that a cancellation sent on another request finds its call.
  const held = new HeldCalls();

  const handle = async (request: FastifyRequest<{ Params: { addressId?: string } }>, reply: FastifyReply) => {
    const parsed = parseBody(request);
    if (!parsed.ok) return jsonRpcError(reply, 400, ErrorCode.ParseError, 'Parse error: Invalid JSON');
    const body = parsed.body;
    if (body !== null) {
      const problem = envelopeProblem(body);
      if (problem) return jsonRpcError(reply, 400, ErrorCode.InvalidRequest, problem.message, {}, problem.id);
    }

    const { buildMcpServer, paramsProblem, Transport } = await loadSdk();
    const single = singleRequest(body);
    const badParams = single && paramsProblem(single.method, body);
    if (single && badParams) {
      // As the SDK answers a request it cannot serve: a JSON-RPC error in a 200 answer.
      return jsonRpcError(reply, 200, ErrorCode.InvalidParams, badParams, {}, single.id);
    }
    const clientIp = clientKey(request.ip);
    const caller = callerKey(request.headers.authorization, clientIp);
    for (const { id, reason } of cancelledIds(body)) held.cancel(caller, id, reason);

    // From here the SDK writes the response itself.
    reply.hijack();
    const server = buildMcpServer({
      service,
      callbacks,
      boundAddressId: request.params.addressId,
      authorization: request.headers.authorization,
      clientIp,
      signal: clientGone(reply),
      onInternalError: (error) => {
        metrics.storageErrors.inc();
        request.log.error({ err: error }, 'MCP tool failed');
      },
    });
    const transport = new Transport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    let release = () => {};
    if (single?.method === 'tools/call') {
      // A cancellation arriving on another request: handed to this request's server as if it
      // had come here, so that the SDK ends the call and sends no response (MCP
      // "Cancellation"); the HTTP request then ends without one.
      release = held.add(caller, single.id, (reason) => {
        transport.onmessage?.({
          jsonrpc: '2.0',
          method: 'notifications/cancelled',
          params: { requestId: single.id, ...(reason === undefined ? {} : { reason }) },
        });
        if (!reply.raw.headersSent) reply.raw.writeHead(202).end();
      });
    }
    reply.raw.on('close', () => {
      release();
      void transport.close();
      void server.close();
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(request.raw, reply.raw, body);
    } catch (error) {
      request.log.error({ err: error }, 'MCP request failed');
      if (!reply.raw.headersSent) {
        reply.raw.writeHead(500, { 'content-type': 'application/json' });
        reply.raw.end(
          JSON.stringify({
            jsonrpc: '2.0',
            error: { code: ErrorCode.InternalError, message: 'Internal error; retry later.' },
            id: null,
          }),
        );
      }
    }
  };

  // Stateless: no server-initiated stream (GET) and no session to end (DELETE); the SDK's
  // stateless examples answer 405 with a JSON-RPC error, and clients expect exactly that.
  const methodNotAllowed = async (_request: FastifyRequest, reply: FastifyReply) =>
    jsonRpcError(reply, 405, SERVER_ERROR, 'Method not allowed: this stateless MCP endpoint takes POST only.', {
      Allow: 'POST',
    });

  const description =
    'Streamable HTTP MCP endpoint (stateless; POST JSON-RPC with "Accept: application/json, text/event-stream"). ' +
    'Credentials: "Authorization: Bearer roost_read_…" or the tools\' read_token argument. See /llms.txt.';
  const jsonRpc = (what: string) => ({
    description: what,
    content: {
      'application/json': { schema: Type.Object({ jsonrpc: Type.Literal('2.0') }, { additionalProperties: true }) },
    },
  });
  const common = {
    description,
    security: optionalBearerSecurity,
    response: {
      200: {
        description: 'A JSON-RPC response, as JSON or as a one-message event stream (the Accept header decides).',
        content: {
          'application/json': { schema: Type.Object({ jsonrpc: Type.Literal('2.0') }, { additionalProperties: true }) },
          'text/event-stream': { schema: Type.String() },
        },
      },
      202: { description: 'A notification or response accepted (no body).', type: 'null' },
      400: jsonRpc('A malformed JSON-RPC message (JSON-RPC error).'),
      406: jsonRpc('The Accept header allows neither application/json nor text/event-stream (JSON-RPC error).'),
    },
  };
  app.post(
    '/mcp',
    { schema: { operationId: 'mcp', summary: 'MCP: create return addresses and use any of them', ...common } },
    handle,
  );
  app.post(
    '/mcp/:addressId',
    {
      schema: {
        operationId: 'mcpForAddress',
        summary: 'MCP bound to one return address (mcp_url)',
        params: AddressParamsSchema,
        ...common,
      },
    },
    handle,
  );
  for (const url of ['/mcp', '/mcp/:addressId']) {
    app.route({ method: ['GET', 'DELETE', 'PUT', 'PATCH'], url, schema: { hide: true }, handler: methodNotAllowed });
    app.options(url, { schema: { hide: true } }, preflight);
  }
}
