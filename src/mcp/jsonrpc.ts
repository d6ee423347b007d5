// The JSON-RPC 2.0 envelope of what a client POSTs, checked before the SDK sees it: the SDK
// answers a malformed envelope (no "jsonrpc", a null id) with -32700 "Parse error", where
// JSON-RPC says -32600 "Invalid Request" (the JSON parsed; the message is wrong).

export type JsonRpcId = string | number;

export interface EnvelopeProblem {
  /** The offending message's id when it has a usable one, else null (JSON-RPC §5). */
  id: JsonRpcId | null;
  message: string;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const isId = (value: unknown): value is JsonRpcId =>
  typeof value === 'string' || (typeof value === 'number' && Number.isSafeInteger(value));

function messageProblem(message: unknown): EnvelopeProblem | undefined {
  if (!isObject(message)) return { id: null, message: 'Invalid Request: a JSON-RPC message is a JSON object.' };
  const id = isId(message.id) ? message.id : null;
  const invalid = (what: string) => ({ id, message: `Invalid Request: ${what}` });
  if (message.jsonrpc !== '2.0') return invalid('"jsonrpc" must be "2.0".');
  if ('method' in message) {
    if (typeof message.method !== 'string' || message.method === '') return invalid('"method" must be a string.');
    // MCP: a request id is a string or an integer, never null.
    if ('id' in message && !isId(message.id)) return invalid('"id" must be a string or an integer (not null).');
    if ('params' in message && !isObject(message.params)) return invalid('"params" must be an object.');
    return undefined;
  }
  if (!isId(message.id)) return invalid('"id" must be a string or an integer (not null).');
  if ('result' in message === 'error' in message) return invalid('a response has "result" or "error".');
  return undefined;
}

/** The first problem with a POSTed body's JSON-RPC envelope (one message or a batch), if any. */
export function envelopeProblem(body: unknown): EnvelopeProblem | undefined {
  if (Array.isArray(body)) {
    if (body.length === 0) return { id: null, message: 'Invalid Request: an empty batch.' };
    for (const message of body) {
      const problem = messageProblem(message);
      if (problem) return problem;
    }
    return undefined;
  }
  return messageProblem(body);
}

/** A single request (not a notification or a batch) with this method, or undefined. */
export function singleRequest(
  body: unknown,
  method?: string,
): { id: JsonRpcId; method: string; params: Record<string, unknown> } | undefined {
  if (!isObject(body) || !isId(body.id) || typeof body.method !== 'string') return undefined;
  if (method !== undefined && body.method !== method) return undefined;
  return { id: body.id, method: body.method, params: isObject(body.params) ? body.params : {} };
}

/** The request ids named by the `notifications/cancelled` messages of a body. */
export function cancelledIds(body: unknown): Array<{ id: JsonRpcId; reason: string | undefined }> {
  const messages = Array.isArray(body) ? body : [body];
  const found: Array<{ id: JsonRpcId; reason: string | undefined }> = [];
  for (const message of messages) {
    if (!isObject(message) || message.method !== 'notifications/cancelled' || !isObject(message.params)) continue;
    const { requestId, reason } = message.params;
    if (isId(requestId)) found.push({ id: requestId, reason: typeof reason === 'string' ? reason : undefined });
  }
  return found;
}
