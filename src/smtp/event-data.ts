// The `data` of an `email.received` event, from what the worker made of the message: the
// parsed fields, the manifest of the parts stored beside the event (with their URLs, which
// name the event), the authentication summary and the hints. Bounded whatever the message
// (docs/email.md "Size of an event").
import { createHash } from 'node:crypto';
import { RAW_EMAIL_PART, type EmailPart } from '../storage/storage.js';
import type { AuthenticationSummary } from './authenticate.js';
import type { Extracted } from './extract.js';
import { unparsedEmail, type EmailData } from './parse.js';
import type { Processed } from './processor.js';

export interface EmailContent {
  /** Everything but the URLs, which need the event's id. */
  data: Omit<EmailData, 'attachments'> & {
    attachments: Array<Omit<EmailData['attachments'][number], 'url'>>;
    authentication: AuthenticationSummary;
    extracted: Extracted;
  };
  dedupeKey: string;
  parts: EmailPart[];
  rawSha256: string;
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

export function emailContent(raw: Buffer, processed: Processed): EmailContent {
  const rawSha256 = sha256(raw);
  const rawPart: EmailPart = {
    part: RAW_EMAIL_PART,
    sha256: rawSha256,
    contentType: 'message/rfc822',
    filename: 'message.eml',
    bytes: raw,
  };
  const { parsed, authentication } = processed;
  if (!parsed) {
    // The deadline stopped parsing: the message is queued all the same, readable whole at raw.url.
    return {
      data: {
        ...unparsedEmail(`${processed.overrun ?? 'parsing failed'}; the message is whole at raw.url`),
        authentication,
        extracted: { note: 'hints only, guessed from the message text; links were not visited', codes: [], links: [] },
      },
      dedupeKey: `sha256:${rawSha256}`,
      parts: [rawPart],
      rawSha256,
    };
  }
  const parts = parsed.data.attachments.map((attachment, index): EmailPart => ({
    part: index,
    sha256: attachment.sha256,
    contentType: attachment.content_type,
    filename: attachment.filename,
    bytes: parsed.attachmentBytes[index],
  }));
  return {
    data: { ...parsed.data, authentication, extracted: parsed.extracted },
    dedupeKey: parsed.dedupeKey,
    parts: [rawPart, ...parts],
    rawSha256,
  };
}

/** The event's data with the URLs of its parts, once its id is known. */
export function emailEventData(content: EmailContent, rawSize: number, partsUrl: string) {
  const { attachments, authentication, extracted, ...fields } = content.data;
  return {
    ...fields,
    attachments: attachments.map((attachment, index) => ({ ...attachment, url: `${partsUrl}/attachments/${index}` })),
    raw: { size: rawSize, sha256: content.rawSha256, url: `${partsUrl}/raw` },
    authentication,
    extracted,
  };
}
