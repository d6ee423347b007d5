// Inbound email (docs/api.md §8): an SMTP server for ROOST_MAIL_DOMAIN that accepts mail for
// live return addresses and hands each message to the core's one `deliver` path — one
// `email.received` event per recipient address — and keeps postmaster@ and abuse@ mail for
// the operator (postmaster.ts). It is a final destination, never a relay: no AUTH, no other
// domains. 250 is answered only after every event is committed, and names the events. The
// port faces the internet: work per message is bounded and done off the event loop
// (processor.ts), each client IP has its own limits (ip-limits.ts), and STARTTLS is offered
// when the operator gives a certificate (tls-files.ts).
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { SMTPServer, type SMTPServerAddress, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import type { Config } from '../config.js';
import { ServiceError, fromStorage } from '../core/errors.js';
import { EVENT_CAPACITY } from '../core/limits.js';
import type { Metrics } from '../core/metrics.js';
import type { RoostService } from '../core/service.js';
import type { AddressRecord } from '../core/records.js';
import type { DnsResolver } from './authenticate.js';
import { emailContent, emailEventData, rawEmailPart } from './event-data.js';
import { IpLimits } from './ip-limits.js';
import { OPERATOR_MAILBOXES, PostmasterDirectory } from './postmaster.js';
import { EmailProcessor } from './processor.js';
import { receivedLine, sessionTls } from './received.js';
import { RefusalRecorder, accepted, refusal } from './replies.js';
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
  /** Workers parsing a message now (for tests and diagnostics). */
  readonly parsing: number;
  close(): Promise<void>;
}

interface Deps {
  config: Config;
  service: RoostService;
  logger: Logger;
  /** Counts refusals (roost_smtp_refusals_total). */
  metrics?: Metrics;
}

const isTransient = (err: unknown) => !(err instanceof ServiceError) || err.status >= 500;

const clientIp = (session: SMTPServerSession) => session.remoteAddress.replace(/^::ffff:/, '');

/** Where one recipient's copy goes: a return address, or the postmaster directory. */
type Target = { kind: 'address'; record: AddressRecord } | { kind: 'postmaster'; record: AddressRecord | null };

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

export async function startSmtpServer(
  { config, service, logger, metrics }: Deps,
  options: SmtpOptions = {},
): Promise<RunningSmtp> {
  const log = logger.child({ component: 'smtp' });
  /** For lines of ids and counts only: pino's redaction pass, costly a line, finds nothing there (the scrub still runs). */
  const plainLog = log.child({}, { redact: [] });
  const limits = config.email;
  const hostname = limits.hostname;
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
  const refusals = new RefusalRecorder(log, metrics);
  const postmasterDir = new PostmasterDirectory(limits.postmasterDir);
  let tls: TlsFiles | null = null;
  if (limits.tlsCertPath && limits.tlsKeyPath)
    tls = watchTlsFiles(limits.tlsCertPath, limits.tlsKeyPath, options.tlsWatchIntervalMs ?? 5_000, log);
  const domain = config.mailDomain.toLowerCase();
  const inFlight = new Set<Promise<void>>();

  /** The return address named by ROOST_POSTMASTER_ADDRESS, while it is live. */
  async function postmasterAddress(): Promise<AddressRecord | null> {
    const named = limits.postmasterAddress;
    if (!named) return null;
    const record = await service.findAddressBySlug(named.slice(0, named.lastIndexOf('@')));
    if (record && record.email.toLowerCase() === named) return record;
    log.warn('ROOST_POSTMASTER_ADDRESS names no live return address; postmaster mail is kept in the directory');
    return null;
  }

  /** Where mail for an envelope recipient goes, or null (unknown, expired, other domain). */
  async function recipientTarget(recipient: string): Promise<Target | null> {
    // RFC 5321 §4.5.1: "postmaster" alone, without a domain, is the postmaster too.
    if (recipient.toLowerCase() === 'postmaster') return { kind: 'postmaster', record: await postmasterAddress() };
    const at = recipient.lastIndexOf('@');
    if (at <= 0) return null;
    const local = recipient.slice(0, at).toLowerCase();
    const host = recipient.slice(at + 1).toLowerCase();
    if (host === domain && OPERATOR_MAILBOXES.has(local))
      return { kind: 'postmaster', record: await postmasterAddress() };
    if (!/^[a-z0-9]+(-[a-z0-9]+)*$/.test(local) || local.length > 40) return null;
    const record = await service.findAddressBySlug(local);
    // The mail domain, or the domain the address's email was issued with (it is fixed at
    // creation, and stays valid if the operator changes ROOST_MAIL_DOMAIN later).
    if (!record || (host !== domain && host !== record.email.slice(record.email.lastIndexOf('@') + 1).toLowerCase()))
      return null;
    return { kind: 'address', record };
  }

  async function onRcptTo(address: SMTPServerAddress): Promise<void> {
    let target: Target | null;
    let room: boolean;
    try {
      target = await recipientTarget(address.address);
      if (!target) room = false;
      else if (target.kind === 'address') room = await service.hasRoom(target.record.id);
      // The postmaster's address when it has room, else the directory.
      else
        room = (target.record !== null && (await service.hasRoom(target.record.id))) || (await postmasterDir.hasRoom());
    } catch (err) {
      log.error({ err }, 'recipient lookup failed');
      throw refusal(451, '4.3.0', 'temporary_failure', 'Temporary failure, try again later', address.address);
    }
    // Unknown, deleted, expired and foreign recipients get one and the same answer: no relaying.
    if (!target) throw refusal(550, '5.1.1', 'unknown_mailbox', 'No such mailbox here', address.address);
    // docs/api.md §8: a full queue is a temporary refusal; the sender retries this recipient later.
    if (!room)
      throw refusal(
        452,
        '4.2.2',
        'mailbox_full',
        `Mailbox full: the return address holds ${EVENT_CAPACITY} unacknowledged events`,
        address.address,
      );
  }

  async function onData(stream: SMTPServerDataStream, session: SMTPServerSession): Promise<string> {
    // Read the envelope now: smtp-server resets the session once the callback has run.
    const recipients = session.envelope.rcptTo.map((r) => r.address);
    const mailFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
    const helo = session.hostNameAppearsAs || '';
    const protocol = session.transmissionType || 'SMTP';
    const sessionTlsInfo = sessionTls(session);
    const chunks: Buffer[] = [];
    let length = 0;
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      // Past the limit nothing is kept; smtp-server answers 552 5.3.4 itself (rejectOversized).
      if (stream.sizeExceeded) continue;
      chunks.push(chunk);
      length += chunk.length;
    }
    if (stream.sizeExceeded || length > config.maxEmailBytes) {
      throw refusal(
        552,
        '5.3.4',
        'too_big',
        `Message exceeds the fixed maximum message size of ${config.maxEmailBytes} bytes`,
      );
    }
    const raw = Buffer.concat(chunks, length);
    const remoteIp = clientIp(session);
    const processed = await processor.process({
      raw,
      ip: remoteIp,
      helo: session.hostNameAppearsAs || session.clientHostname,
      sender: mailFrom,
      mta: hostname,
    });
    const content = emailContent(processed);
    /** The message as stored for one recipient: with its Received line (RFC 5321 §4.4). */
    const stamp = (id: string, recipient: string, now: Date) => {
      const line = receivedLine({
        helo,
        ip: remoteIp,
        hostname,
        protocol,
        tls: sessionTlsInfo,
        id,
        recipient,
        date: now,
      });
      const bytes = Buffer.concat([Buffer.from(line, 'latin1'), raw]);
      return { line, bytes, sha256: sha256(bytes) };
    };
    const ids: string[] = [];
    // One copy per return address (or one file), however many of its spellings were named.
    const done = new Set<string>();
    let queueFull = false;
    for (const recipient of recipients) {
      let target: Target | null;
      try {
        target = await recipientTarget(recipient);
        // Deleted or expired since RCPT: like mail that arrives just after the deletion.
        if (!target) continue;
        const key = target.record ? target.record.id : 'postmaster-directory';
        if (done.has(key)) continue;
        done.add(key);
        const record = target.record;
        if (record) {
          try {
            let stamped: ReturnType<typeof stamp> | undefined;
            const addressId = record.id;
            const result = await service.deliver(
              record,
              {
                type: 'email.received',
                source: 'email',
                dataFor: (eventId) => {
                  stamped = stamp(eventId, recipient, new Date());
                  return emailEventData(
                    content,
                    { size: stamped.bytes.length, sha256: stamped.sha256, received: stamped.line },
                    `${config.baseUrl}/api/v1/addresses/${addressId}/events/${eventId}`,
                  );
                },
                partsFor: () => [rawEmailPart(stamped!.bytes, stamped!.sha256), ...content.parts],
                // docs/email.md "Duplicates": only a Message-ID names a message; without one
                // every transaction is new (SMTP is at-least-once).
                dedupe_key: content.dedupeKey,
                metadata: {
                  envelope_from: mailFrom,
                  envelope_to: recipient,
                  remote_address: remoteIp,
                  helo,
                },
              },
              undefined,
              'email',
            );
            ids.push(result.body.event.id);
            plainLog.info(
              {
                addressId: record.id,
                eventId: result.body.event.id,
                sequence: result.body.event.sequence,
                duplicate: result.body.duplicate,
                bytes: length,
              },
              'email queued',
            );
            continue;
          } catch (thrown) {
            // The postmaster's address being full or gone is no reason to refuse: the directory keeps it.
            const err = fromStorage(thrown);
            const lost = err instanceof ServiceError && ['address_not_found', 'queue_full'].includes(err.code);
            if (target.kind === 'address' || !lost) throw thrown;
          }
        }
        const now = new Date();
        const id = postmasterDir.newId(now);
        const path = await postmasterDir.keep(id, stamp(id, recipient, now).bytes);
        ids.push(id);
        log.info({ path, bytes: length, envelope_to: recipient }, 'postmaster mail kept');
      } catch (thrown) {
        const err = fromStorage(thrown);
        if (err instanceof ServiceError && err.code === 'address_not_found') continue;
        if (err instanceof ServiceError && err.code === 'queue_full') {
          // Filled between RCPT and DATA. The whole message is refused for now; recipients
          // that did take it get it again on the retry unless it has a Message-ID.
          queueFull = true;
          continue;
        }
        log.error({ err }, 'email delivery failed');
        throw isTransient(err)
          ? refusal(451, '4.3.0', 'temporary_failure', 'Temporary failure, try again later')
          : refusal(554, '5.6.0', 'refused', `Refused: ${(err as Error).message}`);
      }
    }
    if (queueFull)
      throw refusal(
        452,
        '4.2.2',
        'mailbox_full',
        'Mailbox full: the return address holds all the unacknowledged events it may; try again later',
      );
    if (ids.length === 0) throw refusal(550, '5.1.1', 'unknown_mailbox', 'No such mailbox here');
    return accepted(`OK: queued as ${ids.join(' ')}`);
  }

  const server = new SMTPServer({
    name: hostname,
    banner: 'Roost inbound mail',
    size: config.maxEmailBytes,
    rejectOversized: true,
    // RFC 2034/3463: a sending MTA records and bounces with these (5.1.1, 4.2.2…); off by default.
    hideENHANCEDSTATUSCODES: false,
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
      callback(
        refusals.note(
          session,
          refusal(421, '4.7.0', 'too_many_connections', 'Too many connections from your address, try again later'),
        ),
      );
    },
    onClose(session) {
      ipLimits.disconnect(clientIp(session), session.id);
      refusals.forget(session);
    },
    onMailFrom(address, session, callback) {
      const wait = ipLimits.takeMessage(clientIp(session));
      if (wait === 0) return callback();
      callback(
        refusals.note(
          session,
          refusal(
            451,
            '4.7.0',
            'rate_limited',
            `Too many messages from your address; try again in ${wait} s`,
            address.address,
          ),
        ),
      );
    },
    onRcptTo(address, session, callback) {
      onRcptTo(address).then(
        () => callback(),
        (err: Error) => callback(refusals.note(session, err)),
      );
    },
    onData(stream, session, callback) {
      const work = onData(stream, session).then(
        (message) => callback(null, message),
        (err: Error) => {
          if (!(err as { responseCode?: number }).responseCode) log.error({ err }, 'email handling failed');
          callback(
            refusals.note(
              session,
              (err as { responseCode?: number }).responseCode
                ? err
                : refusal(451, '4.3.0', 'temporary_failure', 'Temporary failure, try again later'),
            ),
          );
        },
      );
      inFlight.add(work);
      void work.finally(() => inFlight.delete(work));
    },
  });
  refusals.install(server);
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
    get parsing() {
      return processor.parsing;
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
          connection.send(421, '4.3.2 Server shutting down, try again later');
          connection.close();
        }
        await closed;
        tls?.stop();
        await processor.close();
      })()),
  };
}
