// JSON logs on stdout (docs/api.md §10) with secrets cut out (docs/api.md §1): request URLs are
// logged by their matched route with secret parameters and credential-like query values
// redacted, no header is logged, and every line is scrubbed of secret-shaped text last.
import pino, { type DestinationStream, type Logger } from 'pino';
import { redactRequestUrl, redactUrl, scrubSecrets, type RoutedRequest } from './redact.js';

/** The longest a log line waits in the buffer before it is written. */
const LOG_FLUSH_MS = 100;

type LoggedRequest = RoutedRequest & { method: string; ip?: string };

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      redact: {
        paths: [
          'req.headers.authorization',
          'req.headers.cookie',
          'headers.authorization',
          'read_token',
          '*.read_token',
        ],
        censor: '[REDACTED]',
      },
      serializers: {
        req: (req: LoggedRequest) => ({
          method: req.method,
          url: req.routeOptions === undefined ? redactUrl(req.url) : redactRequestUrl(req),
          ip: req.ip,
        }),
        err: pino.stdSerializers.err,
      },
      // The last line of defence: whatever a line holds — a message quoting input, an
      // error echoing a header — nothing shaped like a secret leaves the process.
      hooks: { streamWrite: scrubSecrets },
    },
    destination ?? stdoutInBlocks(),
  );
}

/**
 * stdout in blocks, flushed periodically, so that logging is not a write(2) per line.
 * Buffered lines are written at exit; a SIGKILL can lose the last flush interval of them.
 * The block holds each line's bytes: in text mode sonic-boom measured the whole pending
 * block again with every line (BENCHMARKS.md, "The log's block").
 */
function stdoutInBlocks(): DestinationStream {
  const blocks = pino.destination({
    dest: 1,
    sync: false,
    // Each block written is a hand-off to libuv's thread pool: larger blocks, fewer of them
    // (BENCHMARKS.md, "The log's blocks, 8 KiB → 64 KiB"). maxWrite must exceed minLength.
    minLength: 64 * 1024,
    maxWrite: 256 * 1024,
    periodicFlush: LOG_FLUSH_MS,
    contentMode: 'buffer',
    // sonic-boom's types describe its text mode only: in buffer mode write takes bytes.
  }) as unknown as { write(bytes: Buffer): boolean; flush(done: (error?: Error) => void): void };
  const stream = {
    write: (line: string) => blocks.write(Buffer.from(line)),
    // logger.flush() reaches the block through this (src/server.ts, on close).
    flush: (done: (error?: Error) => void) => blocks.flush(done),
  };
  return stream;
}
