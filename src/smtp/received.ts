// The Received line Roost prepends to each stored message (RFC 5321 §4.4), so that a
// message can be followed from the sending MTA's log to its event: who connected (the name
// it gave in HELO and its IP), whether TLS carried it, which host took it, the event id and
// when. The HELO name and the recipient come from the sender: only safe characters are kept.
import type { SMTPServerSession } from 'smtp-server';

export interface ReceivedInfo {
  helo: string;
  ip: string;
  /** This host's name (ROOST_SMTP_HOSTNAME). */
  hostname: string;
  /** SMTP, ESMTP, ESMTPS… (RFC 3848). */
  protocol: string;
  /** The TLS version and cipher, when the session was encrypted. */
  tls: { version: string; cipher: string } | null;
  /** The event id (or the postmaster file's name). */
  id: string;
  recipient: string;
  date: Date;
}

const token = (value: string, max: number) => value.replace(/[^A-Za-z0-9.:_@+=[\]-]/g, '').slice(0, max);

/** RFC 5322 date-time in UTC. */
export const rfc5322Date = (date: Date) => date.toUTCString().replace(/GMT$/, '+0000');

export function receivedLine(info: ReceivedInfo): string {
  const helo = token(info.helo, 255) || 'unknown';
  const tls = info.tls ? `\r\n\t(using ${token(info.tls.version, 32)} with cipher ${token(info.tls.cipher, 64)})` : '';
  return (
    `Received: from ${helo} (unknown [${token(info.ip, 64)}])${tls}\r\n` +
    `\tby ${info.hostname} (Roost) with ${token(info.protocol, 16)} id ${info.id}\r\n` +
    `\tfor <${token(info.recipient, 320)}>; ${rfc5322Date(info.date)}\r\n`
  );
}

/** What a session tells about its TLS, if any. */
export function sessionTls(session: SMTPServerSession): ReceivedInfo['tls'] {
  const options = session.tlsOptions as { version?: string; standardName?: string; name?: string } | false;
  if (!session.secure || !options) return null;
  return { version: options.version ?? 'TLS', cipher: options.standardName ?? options.name ?? 'unknown' };
}
