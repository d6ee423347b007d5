// The `data` of an `email.received` event, from what the worker made of the message: the
// parsed fields, the manifest of the parts stored beside the event (with their URLs, which
// name the event), the authentication summary and the hints. Bounded whatever the message
// (docs/email.md "Size of an event").
import { RAW_EMAIL_PART, type EmailPart } from '../core/records.js';
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
  /** The Message-ID when it can be a key; a message without one is never deduplicated. */
  dedupeKey: string | undefined;
  /** The attachments; the raw message is added per event (its Received line names the event). */
  parts: EmailPart[];
}

/** The stored message: as received, after the Received line that names its event. */
export interface StoredRaw {
  size: number;
  sha256: string;
  /** The Received line prepended (CRLF-folded), also listed first in `headers.received`. */
  received: string;
}

export const rawEmailPart = (bytes: Buffer, sha256: string): EmailPart => ({
  part: RAW_EMAIL_PART,
  sha256,
  contentType: 'message/rfc822',
  filename: 'message.eml',
  bytes,
});

export function emailContent(processed: Processed): EmailContent {
  const { parsed, authentication } = processed;
  if (!parsed) {
    // The deadline stopped parsing: the message is queued all the same, readable whole at raw.url.
    return {
      data: {
        ...unparsedEmail(`${processed.overrun ?? 'parsing failed'}; the message is whole at raw.url`),
        authentication,
        extracted: { note: 'hints only, guessed from the message text; links were not visited', codes: [], links: [] },
      },
      dedupeKey: undefined,
      parts: [],
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
    parts,
  };
}

/** The event's data with the URLs of its parts and its Received line, once its id is known. */
export function emailEventData(content: EmailContent, raw: StoredRaw, partsUrl: string) {
  const { attachments, authentication, extracted, headers, ...fields } = content.data;
  const ours = raw.received
    .replace(/^Received:\s*/i, '')
    .replace(/\r\n\s+/g, ' ')
    .trim();
  const held = headers.received;
  const received = held === undefined ? ours : [ours, ...(Array.isArray(held) ? held : [held])];
  return {
    ...fields,
    headers: { ...headers, received },
    attachments: attachments.map((attachment, index) => ({ ...attachment, url: `${partsUrl}/attachments/${index}` })),
    raw: { size: raw.size, sha256: raw.sha256, url: `${partsUrl}/raw` },
    authentication,
    extracted,
  };
}
