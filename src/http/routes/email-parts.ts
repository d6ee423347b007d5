// GET …/events/{eventId}/attachments/{index} and …/events/{eventId}/raw: the bytes an
// email.received event lists but does not hold (docs/email.md). Bearer-protected as the
// events URL. Whatever a sender declared, the bytes go out as a download, never rendered
// by a browser on this origin: attachment disposition, nosniff and a sandboxing CSP.
import { create as contentDisposition } from 'content-disposition';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { EmailPart } from '../../core/service.js';
import { EmailAttachmentParamsSchema, EmailPartBodySchema, EmailPartParamsSchema } from '../../contract/schemas.js';
import { bearerSecurity, errorResponses, requestToken } from './common.js';

const binary = {
  description: 'The stored bytes.',
  content: { 'application/octet-stream': { schema: EmailPartBodySchema } },
};

function sendPart(reply: FastifyReply, part: EmailPart, fallbackName: string) {
  return reply
    .header('content-type', part.contentType)
    .header('content-disposition', contentDisposition(part.filename ?? fallbackName, { type: 'attachment' }))
    .header('x-content-type-options', 'nosniff')
    .header('content-security-policy', "default-src 'none'; sandbox")
    .header('cache-control', 'private, no-store')
    .header('etag', `"${part.sha256}"`)
    .send(Buffer.from(part.bytes.buffer, part.bytes.byteOffset, part.bytes.byteLength));
}

export async function emailPartRoutes(app: FastifyInstance): Promise<void> {
  const { service } = app.roost;

  app.get<{ Params: { addressId: string; eventId: string; index: string } }>(
    '/api/v1/addresses/:addressId/events/:eventId/attachments/:index',
    {
      schema: {
        operationId: 'getEmailAttachment',
        summary: 'Download an attachment of an email event',
        description:
          'The bytes of data.attachments[index] of an email.received event; their sha256 and size are in the manifest.',
        security: bearerSecurity,
        params: EmailAttachmentParamsSchema,
        response: { 200: binary, ...errorResponses(400, 401, 404) },
      },
      handler: async (request, reply) => {
        const { addressId, eventId, index } = request.params;
        const part = await service.getEmailPart(addressId, requestToken(request), eventId, Number(index));
        return sendPart(reply, part, `attachment-${index}`);
      },
    },
  );

  app.get<{ Params: { addressId: string; eventId: string } }>('/api/v1/addresses/:addressId/events/:eventId/raw', {
    schema: {
      operationId: 'getEmailRaw',
      summary: 'Download the raw message of an email event',
      description: 'The message exactly as received (message/rfc822), headers and all parts included.',
      security: bearerSecurity,
      params: EmailPartParamsSchema,
      response: { 200: binary, ...errorResponses(401, 404) },
    },
    handler: async (request, reply) => {
      const { addressId, eventId } = request.params;
      const part = await service.getEmailPart(addressId, requestToken(request), eventId, 'raw');
      return sendPart(reply, part, 'message.eml');
    },
  });
}
