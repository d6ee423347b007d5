// Inbound email (CONTRACT §8): an SMTP server for ROOST_MAIL_DOMAIN that accepts mail for
// live return addresses and hands each message to the core's one `deliver` path — one
// `email.received` event per recipient address. It is a final destination, never a relay:
// no AUTH, no other domains. 250 is answered only after every event is committed.
import type { Logger } from 'pino';
import { SMTPServer, type SMTPServerAddress, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import type { Config } from '../config.js';
import { RoostError } from '../core/errors.js';
import type { RoostService } from '../core/service.js';
import type { AddressRecord } from '../storage/storage.js';
import { Authenticator, type DnsResolver } from './authenticate.js';
import { extractHints } from './extract.js';
import { parseEmail } from './parse.js';

/** Recipients one message may name; more get 452 and the sender sends the rest later (RFC 5321 §4.5.3.1.8). */
export const MAX_RECIPIENTS = 50;
/** Simultaneous SMTP connections; the next one is told 421 to come back later. */
export const MAX_CONNECTIONS = 100;

export interface SmtpOptions {
  /**
   * Listen on this port instead of config.smtpPort. 0 here means "any free port" — which
   * ROOST_SMTP_PORT=0 cannot say, because there 0 disables SMTP (CONTRACT §8). For tests.
   */
  port?: number;
  /** DNS for SPF/DKIM/DMARC; tests inject one so that they run offline. */
  dnsResolver?: DnsResolver;
  /** Upper bound for the SPF/DKIM/DMARC checks of one message (default 5 s). */
  authTimeoutMs?: number;
}

export interface RunningSmtp {
  /** The port actually listened on. */
  port: number;
  close(): Promise<void>;
}

interface Deps {
  config: Config;
  service: RoostService;
  logger: Logger;
}

/** An SMTP reply carried as an error, the way smtp-server expects it. */
function reply(code: number, message: string): Error & { responseCode: number } {
  return Object.assign(new Error(message), { responseCode: code });
}

const isTransient = (err: unknown) => !(err instanceof RoostError) || err.status >= 500;

export async function startSmtpServer(
  { config, service, logger }: Deps,
  options: SmtpOptions = {},
): Promise<RunningSmtp> {
  const log = logger.child({ component: 'smtp' });
  const authenticator = new Authenticator({ resolver: options.dnsResolver, timeoutMs: options.authTimeoutMs });
  const domain = config.mailDomain.toLowerCase();
  const inFlight = new Set<Promise<void>>();

  /** The live address an envelope recipient names, or null (unknown, expired, other domain). */
  async function recipientAddress(recipient: string): Promise<AddressRecord | null> {
    const at = recipient.lastIndexOf('@');
    if (at <= 0) return null;
    const local = recipient.slice(0, at).toLowerCase();
    const host = recipient.slice(at + 1).toLowerCase();
    if (!/^[a-z0-9]+(-[a-z0-9]+)*$/.test(local) || local.length > 40) return null;
    const record = await service.findAddressBySlug(local);
    // The mail domain, or the domain the address's email was issued with (it is fixed at
    // creation, and stays valid if the operator changes ROOST_MAIL_DOMAIN later).
    if (!record || (host !== domain && host !== record.email.slice(record.email.lastIndexOf('@') + 1).toLowerCase()))
      return null;
    return record;
  }

  async function onRcptTo(address: SMTPServerAddress): Promise<void> {
    let record: AddressRecord | null;
    let room: boolean;
    try {
      record = await recipientAddress(address.address);
      room = record ? await service.hasRoom(record.id) : false;
    } catch (err) {
      log.error({ err }, 'recipient lookup failed');
      throw reply(451, 'Temporary failure, try again later');
    }
    // Unknown, deleted, expired and foreign recipients get one and the same answer: no relaying.
    if (!record) throw reply(550, 'No such mailbox here');
    // CONTRACT §8: a full queue is a temporary refusal; the sender retries this recipient later.
    if (!room) throw reply(452, 'Mailbox full: the return address holds 1000 unacknowledged events');
  }

  async function onData(stream: SMTPServerDataStream, session: SMTPServerSession): Promise<string> {
    // Read the envelope now: smtp-server resets the session once the callback has run.
    const recipients = session.envelope.rcptTo.map((r) => r.address);
    const mailFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
    const chunks: Buffer[] = [];
    let length = 0;
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      // Past the limit nothing is kept; smtp-server answers 552 itself (rejectOversized).
      if (stream.sizeExceeded) continue;
      chunks.push(chunk);
      length += chunk.length;
    }
    if (stream.sizeExceeded || length > config.maxEmailBytes) {
      throw reply(552, `Message exceeds the fixed maximum message size of ${config.maxEmailBytes} bytes`);
    }
    const raw = Buffer.concat(chunks, length);
    const remoteIp = session.remoteAddress.replace(/^::ffff:/, '');
    const [parsed, authentication] = await Promise.all([
      parseEmail(raw),
      authenticator.check({
        raw,
        ip: remoteIp,
        helo: session.hostNameAppearsAs || session.clientHostname,
        sender: mailFrom,
        mta: domain,
      }),
    ]);
    const { headers } = parsed.data;
    const listUnsubscribe = headers['list-unsubscribe'];
    const extracted = extractHints({
      subject: parsed.data.subject,
      text: parsed.data.text,
      html: parsed.data.html,
      listUnsubscribe: Array.isArray(listUnsubscribe) ? listUnsubscribe.join(', ') : listUnsubscribe,
    });
    const data = { ...parsed.data, authentication, extracted };

    let delivered = 0;
    let queueFull = false;
    for (const recipient of recipients) {
      let record: AddressRecord | null;
      try {
        record = await recipientAddress(recipient);
        // Deleted or expired since RCPT: like mail that arrives just after the deletion.
        if (!record) continue;
        const result = await service.deliver(
          record,
          {
            type: 'email.received',
            source: 'email',
            data,
            // CONTRACT §8: a retried transaction carries the same key and queues nothing new.
            dedupe_key: parsed.dedupeKey,
            metadata: {
              envelope_from: mailFrom,
              envelope_to: recipient,
              remote_address: remoteIp,
              helo: session.hostNameAppearsAs || '',
            },
          },
          undefined,
          'email',
        );
        delivered++;
        log.info(
          {
            addressId: record.id,
            sequence: result.body.event.sequence,
            duplicate: result.body.duplicate,
            bytes: length,
          },
          'email queued',
        );
      } catch (err) {
        if (err instanceof RoostError && err.code === 'address_not_found') continue;
        if (err instanceof RoostError && err.code === 'queue_full') {
          // Filled between RCPT and DATA. The whole message is refused for now; recipients
          // that did take it see the retry as a duplicate (same key), so none gets it twice.
          queueFull = true;
          continue;
        }
        log.error({ err }, 'email delivery failed');
        throw isTransient(err)
          ? reply(451, 'Temporary failure, try again later')
          : reply(554, `Refused: ${(err as Error).message}`);
      }
    }
    if (queueFull)
      throw reply(452, 'Mailbox full: the return address holds all the unacknowledged events it may; try again later');
    if (delivered === 0) throw reply(550, 'No such mailbox here');
    return `OK: queued for ${delivered} recipient${delivered === 1 ? '' : 's'}`;
  }

  const server = new SMTPServer({
    name: domain,
    banner: 'Roost inbound mail',
    size: config.maxEmailBytes,
    rejectOversized: true,
    // A final destination for its own domain: nobody logs in, nothing is relayed.
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    hideSTARTTLS: true,
    disableReverseLookup: true,
    maxClients: MAX_CONNECTIONS,
    maxRecipients: MAX_RECIPIENTS,
    logger: false,
    onRcptTo(address, _session, callback) {
      onRcptTo(address).then(
        () => callback(),
        (err: Error) => callback(err),
      );
    },
    onData(stream, session, callback) {
      const work = onData(stream, session).then(
        (message) => callback(null, message),
        (err: Error) => {
          if (!(err as { responseCode?: number }).responseCode) log.error({ err }, 'email handling failed');
          callback(
            (err as { responseCode?: number }).responseCode ? err : reply(451, 'Temporary failure, try again later'),
          );
        },
      );
      inFlight.add(work);
      void work.finally(() => inFlight.delete(work));
    },
  });
  server.on('error', (err) => log.warn({ err }, 'smtp connection error'));

  const port = options.port ?? config.smtpPort;
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(port, config.smtpHost, () => {
      server.server.off('error', reject);
      resolve();
    });
  });
  const bound = server.server.address();
  const actualPort = typeof bound === 'object' && bound ? bound.port : port;

  let closing: Promise<void> | undefined;
  return {
    port: actualPort,
    close: () =>
      (closing ??= (async () => {
        // Stop accepting; let messages already in DATA finish (their 250 means durable),
        // then tell idle sessions to come back later.
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          Promise.allSettled([...inFlight]),
          new Promise((resolve) => (timer = setTimeout(resolve, config.shutdownGraceMs))),
        ]);
        clearTimeout(timer);
        for (const connection of server.connections) {
          connection.send(421, 'Server shutting down, try again later');
          connection.close();
        }
        await closed;
      })()),
  };
}
