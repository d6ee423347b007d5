// The callback URL (docs/api.md §3.6): /api/v1/inbox/{addressId}/callbacks/{callbackId}/{secret}.
// Write-only like the inbox: a wrong address, id or secret is the inbox's 404, an expired or
// cancelled callback 410. POST stores the request as raw capture does (any body) as a
// callback.delivery event; a callback with `human` takes an answer instead (the page's
// form, or JSON), and GET with Accept: text/html shows the page. A GET never completes
// anything: link scanners fetch links.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { HumanAnswer, HumanQuestion, OpenedCallback } from '../../core/callbacks.js';
import { errors, ServiceError } from '../../core/errors.js';
import { mediaType, rawBody, decodeJsonBody } from '../body.js';
import { CALLBACK_PAGE_CSP, answeredPage, closedPage, escapeHtml, questionPage } from '../callback-page.js';
import { captureRequest, headerFilter } from '../raw-capture.js';
import { errorResponses, noSecurity } from './common.js';

const ParamsSchema = Type.Object({
  addressId: Type.String({ description: 'The address id (addr_…).' }),
  callbackId: Type.String({ description: 'The callback id (cb_…).' }),
  callbackSecret: Type.String({ description: 'The callback secret (roost_callback_…) from the callback url.' }),
});
type Params = { addressId: string; callbackId: string; callbackSecret: string };

const ReceiptSchema = Type.Object(
  {
    duplicate: Type.Boolean(),
    callback: Type.Object({
      id: Type.String(),
      status: Type.String({ enum: ['waiting', 'completed', 'expired', 'cancelled'] }),
    }),
  },
  { title: 'CallbackReceipt', description: 'What the URL holder is told: never the stored event.' },
);

const QuestionSchema = Type.Object(
  {
    callback: Type.Object({ id: Type.String(), status: Type.String() }),
    human: Type.Object({ question: Type.String(), options: Type.Array(Type.String()), allow_comment: Type.Boolean() }),
  },
  { title: 'CallbackQuestion' },
);

const PATH = '/api/v1/inbox/:addressId/callbacks/:callbackId/:callbackSecret';

/** Whether the client asked for a page (a browser), not JSON. */
const wantsHtml = (request: FastifyRequest) => /\btext\/html\b/i.test(request.headers.accept ?? '');

function sendPage(reply: FastifyReply, status: number, html: string): FastifyReply {
  return reply
    .code(status)
    .header('Content-Security-Policy', CALLBACK_PAGE_CSP)
    .header('X-Content-Type-Options', 'nosniff')
    .header('Referrer-Policy', 'no-referrer')
    .header('Cache-Control', 'no-store')
    .type('text/html; charset=utf-8')
    .send(html);
}

/** The answer that completed a callback, if one has. */
const firstAnswer = (callback: OpenedCallback['callback']): HumanAnswer | null =>
  callback.answerJson === null ? null : (JSON.parse(callback.answerJson) as HumanAnswer);

/** The answer and comment of a person's POST: the page's form, or JSON { answer, comment }. */
function answerOf(request: FastifyRequest): { answer: unknown; comment: unknown } {
  if (mediaType(request) === 'application/x-www-form-urlencoded') {
    const form = new URLSearchParams(rawBody(request).toString('utf8'));
    return { answer: form.get('answer') ?? undefined, comment: form.get('comment') ?? undefined };
  }
  const body = decodeJsonBody(request, { optional: false });
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw errors.invalidRequest({ message: 'Send { "answer": one of the options, "comment"?: text }.' });
  const { answer, comment } = body as { answer?: unknown; comment?: unknown };
  return { answer, comment };
}

export async function callbackUrlRoutes(app: FastifyInstance): Promise<void> {
  const { callbacks, config } = app.roost;
  const droppedHeader = headerFilter(config.rawDropHeaders);

  /** A refusal as a page for a browser, else in the Error shape. */
  function refuse(request: FastifyRequest, reply: FastifyReply, error: unknown): FastifyReply {
    if (!(error instanceof ServiceError) || !wantsHtml(request) || error.status === 404) throw error;
    return sendPage(reply, error.status, closedPage(error.message));
  }

  /** The callback the URL names, or null once a browser has been shown why not. */
  async function open(
    request: FastifyRequest<{ Params: Params }>,
    reply: FastifyReply,
  ): Promise<OpenedCallback | null> {
    const { addressId, callbackId, callbackSecret } = request.params;
    try {
      return await callbacks.open(addressId, callbackId, callbackSecret);
    } catch (error) {
      refuse(request, reply, error);
      return null;
    }
  }

  app.post<{ Params: Params }>(PATH, {
    schema: {
      operationId: 'deliverToCallback',
      summary: 'Deliver to a callback URL (the secret in the path is the only credential)',
      security: noSecurity,
      description:
        'Any body, stored as raw capture stores it, as an event of type callback.delivery (source callback, metadata.callback_id and callback_key). ' +
        'The first delivery that matches the callback’s complete_when (by default the first) completes it. 202 when stored; a byte-identical repeat or the same Idempotency-Key is 200 with duplicate=true. ' +
        'A callback with `human` takes an answer instead: the page’s form (answer, comment) or JSON { "answer", "comment" }; an answer not among the options is 400. ' +
        'A wrong URL is 404; an expired or cancelled callback 410.',
      params: ParamsSchema,
      response: {
        200: ReceiptSchema,
        202: ReceiptSchema,
        ...errorResponses(400, 404, 410, 413, 415, 429, 503),
      },
    },
    handler: async (request, reply) => {
      const opened = await open(request, reply);
      if (opened === null) return reply;
      const header = request.headers['idempotency-key'];
      if (opened.callback.humanJson === null) {
        const bytes = rawBody(request);
        const { data } = captureRequest(request, bytes, 'callback.delivery', droppedHeader);
        const receipt = await callbacks.deliver(opened, data, bytes, typeof header === 'string' ? header : undefined);
        return reply.code(receipt.status).send(receipt.body);
      }
      const html = wantsHtml(request) || mediaType(request) === 'application/x-www-form-urlencoded';
      const human = JSON.parse(opened.callback.humanJson) as HumanQuestion;
      let result;
      try {
        const { answer, comment } = answerOf(request);
        result = await callbacks.answer(opened, answer, comment, rawBody(request));
      } catch (error) {
        if (!html || !(error instanceof ServiceError) || error.status !== 400) throw error;
        return sendPage(
          reply,
          400,
          questionPage(human).replace('<form', `<p role="alert">${escapeHtml(error.message)}</p>\n<form`),
        );
      }
      const first = firstAnswer(result.callback);
      if (html) return sendPage(reply, 200, answeredPage(human, first, !result.recorded));
      return reply
        .code(result.recorded ? 202 : 200)
        .send({ duplicate: !result.recorded, callback: { id: opened.callback.id, status: result.callback.status } });
    },
  });

  app.get<{ Params: Params }>(PATH, {
    schema: {
      operationId: 'showCallbackQuestion',
      summary: "Show a callback's question (with `human`)",
      security: noSecurity,
      description:
        'With Accept: text/html, the page a person answers on (no script; strict CSP). Otherwise the question as JSON. Never completes anything. A callback without `human` answers 405.',
      params: ParamsSchema,
      response: { 200: QuestionSchema, ...errorResponses(404, 405, 410) },
    },
    handler: async (request, reply) => {
      const opened = await open(request, reply);
      if (opened === null) return reply;
      if (opened.callback.humanJson === null) throw errors.methodNotAllowed({ method: 'GET', allowed: ['POST'] });
      const human = JSON.parse(opened.callback.humanJson) as HumanQuestion;
      if (wantsHtml(request)) {
        if (opened.callback.status === 'waiting') return sendPage(reply, 200, questionPage(human));
        const first = firstAnswer(opened.callback);
        return sendPage(reply, 200, answeredPage(human, first, true));
      }
      reply.header('Cache-Control', 'no-store');
      return {
        callback: { id: opened.callback.id, status: opened.callback.status },
        human: { question: human.question, options: human.options, allow_comment: human.allow_comment ?? false },
      };
    },
  });
}
