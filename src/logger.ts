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
    destination,
  );
}
