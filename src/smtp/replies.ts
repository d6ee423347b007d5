// SMTP replies with RFC 3463 enhanced status codes (advertised as ENHANCEDSTATUSCODES, RFC
// 2034), and the record of every refusal: logged (client, envelope, code, reason; never the
// message) and counted as roost_smtp_refusals_total{code,reason}. smtp-server adds an
// enhanced code to each reply from its reply code alone; a reply of ours that needs a more
// precise one (4.7.0 for a rate limit, 5.3.4 for size) carries it at the head of its text,
// and the connection's one write site is told not to add its own.
import type { Logger } from 'pino';
import type { SMTPServer, SMTPServerSession } from 'smtp-server';
import type { Metrics } from '../core/metrics.js';

/** Why something was refused: a fixed set, so that the metric's labels stay few. */
export type RefusalReason =
  | 'unknown_mailbox'
  | 'mailbox_full'
  | 'too_many_connections'
  | 'rate_limited'
  | 'too_big'
  | 'too_many_recipients'
  | 'temporary_failure'
  | 'refused'
  | 'shutdown'
  | 'timeout'
  | 'protocol';

export type SmtpRefusal = Error & { responseCode: number; reason: RefusalReason; address?: string };

const ENHANCED = /^([245])\.(\d{1,3})\.(\d{1,3}) /;

/** A refusal carried as an error, the way smtp-server expects it: `550 5.1.1 No such mailbox here`. */
export function refusal(
  code: number,
  enhanced: string,
  reason: RefusalReason,
  text: string,
  address?: string,
): SmtpRefusal {
  return Object.assign(new Error(`${enhanced} ${text}`), { responseCode: code, reason, address });
}

/** The text of a positive reply with its own enhanced code (smtp-server would say 2.6.0 after DATA). */
export const accepted = (text: string) => `2.0.0 ${text}`;

interface Connection {
  id: string;
  session: SMTPServerSession;
  remoteAddress: string;
  send(code: number, data?: string | string[], context?: string | false): void;
  _getEnhancedStatusCode(code: number, context?: string | false): string;
}

/** What smtp-server refuses on its own, by the context it names for the enhanced code. */
function nativeReason(code: number, context: string | false | undefined, text: string): RefusalReason {
  if (context === 'MESSAGE_TOO_BIG') return 'too_big';
  if (context === 'TOO_MANY_RECIPIENTS') return 'too_many_recipients';
  if (code === 421 && text.includes('Too many connected clients')) return 'too_many_connections';
  if (code === 421 && text.startsWith('Timeout')) return 'timeout';
  if (code === 421 && /shutting down/i.test(text)) return 'shutdown';
  return 'protocol';
}

/**
 * Makes every connection of `server` keep the enhanced codes of our replies and report
 * each refusal. `noted` hands over what a handler knew about its refusal (reason, recipient),
 * set just before its callback answers.
 */
export class RefusalRecorder {
  private readonly noted = new Map<string, SmtpRefusal>();

  constructor(
    private readonly log: Logger,
    private readonly metrics: Metrics | undefined,
  ) {}

  /** Hooks the server's connections; call once, before it listens. */
  install(server: SMTPServer): void {
    const withConnect = server as unknown as { connect(socket: unknown, options: unknown): void };
    const connect = withConnect.connect.bind(server);
    withConnect.connect = (socket, options) => {
      connect(socket, options);
      const connection = [...(server.connections as Set<Connection>)].at(-1);
      if (connection) this.wrap(connection);
    };
  }

  /** Remembers what a handler refused, for the reply about to be sent on this session. */
  note(session: SMTPServerSession, error: Error): Error {
    if ((error as SmtpRefusal).reason) this.noted.set(session.id, error as SmtpRefusal);
    return error;
  }

  forget(session: SMTPServerSession): void {
    this.noted.delete(session.id);
  }

  private wrap(connection: Connection): void {
    const send = connection.send.bind(connection);
    connection.send = (code, data, context) => {
      const text = typeof data === 'string' ? data : undefined;
      const own = text !== undefined && ENHANCED.test(text);
      if (code >= 400) this.record(connection, code, text ?? '', own, context);
      send(code, data, own ? false : context);
    };
  }

  private record(connection: Connection, code: number, text: string, own: boolean, context?: string | false): void {
    const noted = this.noted.get(connection.id);
    this.noted.delete(connection.id);
    const ours = own && noted !== undefined && noted.message === text ? noted : undefined;
    const reason = ours?.reason ?? nativeReason(code, context, text);
    const enhanced = own ? text.match(ENHANCED)![0].trim() : connection._getEnhancedStatusCode(code, context);
    this.metrics?.smtpRefusals.inc({ code: String(code), reason });
    const envelope = connection.session.envelope as SMTPServerSession['envelope'] | undefined;
    this.log.info(
      {
        client_ip: connection.remoteAddress.replace(/^::ffff:/, ''),
        helo: connection.session.hostNameAppearsAs || undefined,
        mail_from: envelope?.mailFrom ? envelope.mailFrom.address : undefined,
        rcpt_to: envelope?.rcptTo.map((r) => r.address),
        // The address the refused MAIL or RCPT named.
        address: ours?.address,
        code,
        enhanced: enhanced || undefined,
        reason,
      },
      'smtp refusal',
    );
  }
}
