// The SMTP baseline: a bare smtp-server that accepts any recipient, parses each message
// with mailparser (as Roost does before storing it) and drops it.
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export async function startSmtpSink(): Promise<number> {
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    logger: false,
    onData(stream, _session, callback) {
      simpleParser(stream).then(() => callback(), callback);
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.server.address();
  return typeof address === 'object' && address ? address.port : 0;
}
