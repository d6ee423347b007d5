// Each request's logger (request.log) carries the request id, as Fastify's default one does,
// but makes its pino child only when something is logged through it. Most requests log
// nothing there (the access-log line is written by the log controller), and a pino child
// (its bindings and one bound function per level) is kept for as long as the request is:
// for a held long-poll, that is the whole wait.
import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, LogFn } from 'pino';

class RequestLogger {
  private made: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  private get real(): FastifyBaseLogger {
    return (this.made ??= this.parent.child(this.bindings, this.options));
  }

  get level(): string {
    return this.made?.level ?? this.parent.level;
  }
  set level(level: string) {
    this.real.level = level;
  }

  // Methods on the prototype: nothing per request but the object and its three fields.
  fatal(...args: Parameters<LogFn>): void {
    this.real.fatal(...args);
  }
  error(...args: Parameters<LogFn>): void {
    this.real.error(...args);
  }
  warn(...args: Parameters<LogFn>): void {
    this.real.warn(...args);
  }
  info(...args: Parameters<LogFn>): void {
    this.real.info(...args);
  }
  debug(...args: Parameters<LogFn>): void {
    this.real.debug(...args);
  }
  trace(...args: Parameters<LogFn>): void {
    this.real.trace(...args);
  }
  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.real.child(bindings, options);
  }
}

/** Fastify's childLoggerFactory: the child is made on first use. */
export function lazyRequestLogger(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  return new RequestLogger(logger, bindings, options);
}
