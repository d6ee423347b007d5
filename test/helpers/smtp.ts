// A raw SMTP dialogue over a real socket, for the edge cases a well-behaved client library
// will not produce (unknown recipients, relay attempts, oversized or malformed messages).
import { Socket, connect } from 'node:net';

export interface SmtpReply {
  code: number;
  /** All lines of the reply, without the code. */
  text: string;
}

export class SmtpDialogue {
  private buffer = '';
  private readonly replies: SmtpReply[] = [];
  private waiting: ((reply: SmtpReply) => void) | null = null;
  private lines: string[] = [];

  private constructor(private readonly socket: Socket) {
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => this.onData(chunk));
  }

  /** Connects, reads the greeting and says EHLO; returns both replies as `greeting` and `ehlo`. */
  static async open(
    port: number,
    helo = 'client.test',
    localAddress?: string,
  ): Promise<SmtpDialogue & { greeting: SmtpReply; ehlo: SmtpReply }> {
    // localAddress: another loopback address (127.0.0.2…) stands for another client IP.
    const socket = connect({ port, host: '127.0.0.1', localAddress });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    const dialogue = new SmtpDialogue(socket);
    const greeting = await dialogue.next();
    if (greeting.code !== 220) throw new Error(`greeting ${greeting.code} ${greeting.text}`);
    const ehlo = await dialogue.command(`EHLO ${helo}`);
    return Object.assign(dialogue, { greeting, ehlo });
  }

  private onData(chunk: string) {
    this.buffer += chunk;
    let end: number;
    while ((end = this.buffer.indexOf('\r\n')) >= 0) {
      const line = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      this.lines.push(line.slice(4));
      if (line[3] !== '-') {
        const reply = { code: Number(line.slice(0, 3)), text: this.lines.join('\n') };
        this.lines = [];
        const waiter = this.waiting;
        this.waiting = null;
        if (waiter) waiter(reply);
        else this.replies.push(reply);
      }
    }
  }

  private next(): Promise<SmtpReply> {
    const held = this.replies.shift();
    if (held) return Promise.resolve(held);
    return new Promise((resolve) => (this.waiting = resolve));
  }

  command(line: string): Promise<SmtpReply> {
    this.socket.write(`${line}\r\n`);
    return this.next();
  }

  /** DATA, then the message (dot-stuffed here), then the final reply. */
  async data(message: string | Buffer): Promise<SmtpReply> {
    const go = await this.command('DATA');
    if (go.code !== 354) return go;
    const text = (
      Buffer.isBuffer(message) ? message.toString('latin1') : Buffer.from(message, 'utf8').toString('latin1')
    )
      .replace(/\r?\n/g, '\r\n')
      .replace(/^\./gm, '..');
    this.socket.write(Buffer.from(`${text}${text.endsWith('\r\n') ? '' : '\r\n'}.\r\n`, 'latin1'));
    return this.next();
  }

  /** One whole transaction: MAIL, each RCPT, DATA when a recipient was accepted; every reply. */
  async send(from: string, to: string[], message: string | Buffer): Promise<SmtpReply[]> {
    const replies = [await this.command(`MAIL FROM:<${from}>`)];
    if (replies[0].code !== 250) return replies;
    for (const rcpt of to) replies.push(await this.command(`RCPT TO:<${rcpt}>`));
    if (!replies.slice(1).some((r) => r.code === 250)) {
      await this.command('RSET');
      return replies;
    }
    replies.push(await this.data(message));
    return replies;
  }

  async quit(): Promise<void> {
    await this.command('QUIT').catch(() => undefined);
    this.socket.destroy();
  }
}

/** A minimal RFC 5322 message; CRLF line ends. */
export function message(headers: Record<string, string>, body: string): string {
  return `${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}`)
    .join('\r\n')}\r\n\r\n${body}`;
}

/** A stored message split into the Received line Roost put first (unfolded) and the message as sent. */
export function splitReceived(stored: Buffer): { received: string; rest: Buffer } {
  const match = /^Received: [^\r\n]*(?:\r\n[ \t][^\r\n]*)*\r\n/.exec(stored.toString('latin1'));
  if (!match)
    throw new Error(
      `the stored message does not start with a Received line: ${stored.subarray(0, 80).toString('latin1')}`,
    );
  return { received: match[0].replace(/\r\n[ \t]+/g, ' ').trim(), rest: stored.subarray(match[0].length) };
}
