// JSON logs on stdout (CONTRACT §10) with secrets cut out: the Authorization header and
// the secret segment of inbox URLs never reach a log line (CONTRACT §1).
import pino, { type DestinationStream, type Logger } from 'pino';
import { redactUrl } from './http/redact.js';

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      redact: {
        paths: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization', 'read_token', '*.read_token'],
        censor: '[REDACTED]',
      },
      serializers: {
        req: (req: { method: string; url: string; ip?: string }) => ({ method: req.method, url: redactUrl(req.url), ip: req.ip }),
        err: pino.stdSerializers.err,
      },
    },
    destination ?? bufferedStdout(),
  );
}

/** How long a log line may wait in the buffer before it is written. */
const LOG_FLUSH_MS = 100;

/**
 * stdout, written in blocks of 8 KiB or every 100 ms, whichever comes first: one
 * write per line was ~7% of the CPU of ingest, synchronously or not. What is still
 * buffered is written when the process exits (a SIGKILL loses at most that).
 */
function bufferedStdout(): DestinationStream {
  const stream = pino.destination({ dest: 1, sync: false, minLength: 8 * 1024 });
  setInterval(() => stream.flush(), LOG_FLUSH_MS).unref();
  return stream;
}
