// Inbound email (docs/api.md §8): an SMTP server for ROOST_MAIL_DOMAIN that accepts mail for
// live return addresses and hands each message to the core's one `deliver` path — one
// `email.received` event per recipient address. It is a final destination, never a relay:
// no AUTH, no other domains. 250 is answered only after every event is committed. The
// port faces the internet: work per message is bounded and done off the event loop
// (processor.ts), each client IP has its own limits (ip-limits.ts), and STARTTLS is offered
// when the operator gives a certificate (tls-files.ts).
import type { Logger } from 'pino';
import { SMTPServer, type SMTPServerAddress, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import type { Config } from '../config.js';
import { RoostError, fromStorage } from '../core/errors.js';
import { EVENT_CAPACITY } from '../core/limits.js';
import type { RoostService } from '../core/service.js';
import type { AddressRecord } from '../storage/storage.js';
import type { DnsResolver } from './authenticate.js';
import { emailContent, emailEventData } from './event-data.js';
import { IpLimits } from './ip-limits.js';
import { EmailProcessor } from './processor.js';
import { watchTlsFiles, type TlsFiles } from './tls-files.js';

/** Recipients one message may name; more get 452 and the sender sends the rest later (RFC 5321 §4.5.3.1.8). */
export const MAX_RECIPIENTS = 50;
/** Simultaneous SMTP connections; the next one is told 421 to come back later. */
export const MAX_CONNECTIONS = 100;
/** Worker threads that parse and authenticate messages. */
const EMAIL_WORKERS = 2;
/** Bytes of mail a worker holds at once, at least (two of the largest messages, if more). */
const WORKER_BYTES = 64 * 1024 * 1024;

export interface SmtpOptions {
  /**
   * Listen on this port instead of config.smtpPort. 0 here means "any free port" — which
   * ROOST_SMTP_PORT=0 cannot say, because there 0 disables SMTP (docs/api.md §8). For tests.
   */
  port?: number;
  /** DNS for SPF/DKIM/DMARC; tests inject one so that they run offline. */
  dnsResolver?: DnsResolver;
  /** Overrides config.email.processingDeadlineMs (tests). */
  authTimeoutMs?: number;
  /** How often the TLS files are checked for a change (default 5 s; tests go faster). */
  tlsWatchIntervalMs?: number;
}

export interface RunningSmtp {
  /** The port actually listened on. */
  port: number;
  /** Workers stopped for running over their deadline (for tests and diagnostics). */
  readonly terminations: number;
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

const clientIp = (session: SMTPServerSession) => session.remoteAddress.replace(/^::ffff:/, '');

export async function startSmtpServer(
  { config, service, logger }: Deps,
  options: SmtpOptions = {},
): Promise<RunningSmtp> {
  const log = logger.child({ component: 'smtp' });
  const limits = config.email;
  const processor = new EmailProcessor({
    workers: EMAIL_WORKERS,
    // Every connection's message can wait on its DNS at once: messages waiting on silent
    // name servers hold only themselves, never a place another message needs.
    messagesPerWorker: Math.ceil(MAX_CONNECTIONS / EMAIL_WORKERS),
    bytesPerWorker: Math.max(WORKER_BYTES, 2 * config.maxEmailBytes),
    deadlineMs: options.authTimeoutMs ?? limits.processingDeadlineMs,
    limits: { maxTextBytes: limits.maxTextBytes, maxHtmlBytes: limits.maxHtmlBytes },
    resolver: options.dnsResolver,
    logger: log,
  });
  const ipLimits = new IpLimits(limits.maxConnectionsPerIp, limits.messageRate);
  let tls: TlsFiles | null = null;
  if (limits.tlsCertPath && limits.tlsKeyPath)
    tls = watchTlsFiles(limits.tlsCertPath, limits.tlsKeyPath, options.tlsWatchIntervalMs ?? 5_000, log);
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
    // docs/api.md §8: a full queue is a temporary refusal; the sender retries this recipient later.
    if (!room) throw reply(452, `Mailbox full: the return address holds ${EVENT_CAPACITY} unacknowledged events`);
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
    const remoteIp = clientIp(session);
    const processed = await processor.process({
      raw,
      ip: remoteIp,
      helo: session.hostNameAppearsAs || session.clientHostname,
      sender: mailFrom,
      mta: domain,
    });
    const content = emailContent(raw, processed);
    let delivered = 0;
    let queueFull = false;
    for (const recipient of recipients) {
      let record: AddressRecord | null;
      try {
        record = await recipientAddress(recipient);
        // Deleted or expired since RCPT: like mail that arrives just after the deletion.
        if (!record) continue;
        const addressId = record.id;
        const result = await service.deliver(
          record,
          {
            type: 'email.received',
            source: 'email',
            dataFor: (eventId) =>
              emailEventData(content, length, `${config.baseUrl}/api/v1/addresses/${addressId}/events/${eventId}`),
            parts: content.parts,
            // docs/api.md §8: a retried transaction carries the same key and queues nothing new.
            dedupe_key: content.dedupeKey,
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
      } catch (thrown) {
        const err = fromStorage(thrown);
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
    disabledCommands: tls ? ['AUTH'] : ['AUTH', 'STARTTLS'],
    hideSTARTTLS: !tls,
    ...(tls ? tls.current() : {}),
    disableReverseLookup: true,
    maxClients: MAX_CONNECTIONS,
    maxRecipients: MAX_RECIPIENTS,
    socketTimeout: limits.idleTimeoutMs,
    logger: false,
    onConnect(session, callback) {
      // 421 is temporary: a real MTA comes back later (RFC 5321 §3.8).
      if (ipLimits.connect(clientIp(session), session.id)) return callback();
      callback(reply(421, 'Too many connections from your address, try again later'));
    },
    onClose(session) {
      ipLimits.disconnect(clientIp(session), session.id);
    },
    onMailFrom(_address, session, callback) {
      const wait = ipLimits.takeMessage(clientIp(session));
      if (wait === 0) return callback();
      callback(reply(451, `Too many messages from your address; try again in ${wait} s`));
    },
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
  tls?.onChange((files) => {
    server.updateSecureContext(files);
    log.info('SMTP TLS certificate reloaded');
  });

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
    get terminations() {
      return processor.terminations;
    },
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
        tls?.stop();
        await processor.close();
      })()),
  };
}
