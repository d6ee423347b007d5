// Builds and starts everything — storage, service, HTTP (with MCP), SMTP, sweeper — and
// stops it in order on shutdown (docs/api.md §9): stop accepting, answer held polls, finish
// in-flight writes, close storage.
import type { FastifyInstance } from 'fastify';
import type { DestinationStream, Logger } from 'pino';
import type { Config } from './config.js';
import { Metrics } from './core/metrics.js';
import { SecretBox, keyFromFile } from './core/secret-box.js';
import { RoostService, type Clock } from './core/service.js';
import { Sweeper } from './core/sweeper.js';
import { CallbackService } from './core/callbacks.js';
import { Waiters } from './core/waiters.js';
import { buildApp } from './http/app.js';
import { describeClientIp } from './http/client-ip.js';
import { startSmtpServer, type RunningSmtp, type SmtpOptions } from './smtp/server.js';
import { createLogger } from './logger.js';
import { openStorage } from './storage/open.js';
import { ANY_ADDRESS, type Storage } from './storage/storage.js';

export interface StartOptions {
  /** A fake clock, for tests of expiry and retention. */
  clock?: Clock;
  /** Where JSON logs go (default stdout). */
  logDestination?: DestinationStream;
  /** Use this storage instead of opening one from the configuration. */
  storage?: Storage;
  /** SMTP overrides for tests: `port: 0` = any free port, an offline DNS resolver (src/smtp/server.ts). */
  smtp?: SmtpOptions;
}

export interface RunningRoost {
  /** The HTTP origin actually listened on, e.g. http://127.0.0.1:41234. */
  url: string;
  /** The SMTP port listened on, or null when SMTP is disabled. */
  smtpPort: number | null;
  /** The SMTP listener, or null when SMTP is disabled. */
  smtp: RunningSmtp | null;
  config: Config;
  service: RoostService;
  storage: Storage;
  waiters: Waiters;
  metrics: Metrics;
  app: FastifyInstance;
  logger: Logger;
  sweeper: Sweeper;
  close(): Promise<void>;
}

/**
 * The server key from the data directory when ROOST_SECRET_KEY is unset: generated (0600) on
 * the first start, then reused. Instances sharing PostgreSQL need one key, which only
 * ROOST_SECRET_KEY can give them all (docs/scale-out.md): said at start.
 */
function secretKeyFile(config: Config, logger: Logger): Buffer {
  const { key, generated } = keyFromFile(config.secretKeyPath);
  if (generated) logger.info({ path: config.secretKeyPath }, 'generated the server key that seals sender secrets');
  if (config.databaseUrl !== undefined)
    logger.warn(
      { path: config.secretKeyPath },
      "ROOST_SECRET_KEY is not set: sender secrets are sealed with a key from this instance's data directory; " +
        'every instance sharing the database needs the same key (docs/scale-out.md)',
    );
  return key;
}

export async function startRoost(config: Config, options: StartOptions = {}): Promise<RunningRoost> {
  const logger = createLogger(config.logLevel, options.logDestination);
  for (const warning of config.warnings ?? []) logger.warn(warning);
  // Before the storage opens: a key file that cannot be read stops the start with nothing open.
  const secretBox = new SecretBox(config.secretKey ?? secretKeyFile(config, logger));
  const storage = options.storage ?? (await openStorage(config, logger));
  const waiters = new Waiters({ perAddress: config.maxWaitersPerAddress, perClient: config.maxWaitersPerIp });
  const metrics = new Metrics(
    () => waiters.held,
    () => waiters.subscribed,
  );
  const service = new RoostService(storage, waiters, config, metrics, options.clock, secretBox);
  const callbacks = new CallbackService(service, storage, waiters, config, options.clock);
  // Commits made by other instances (PostgreSQL) wake the polls held here.
  const stopListening = storage.onExternalChange?.((addressId) =>
    addressId === ANY_ADDRESS ? waiters.wakeAll() : waiters.wake(addressId),
  );

  const app = await buildApp({ config, service, callbacks, storage, waiters, metrics, logger });
  let url: string;
  let smtp: RunningSmtp | null;
  try {
    // Fastify logs its own "Server listening" line(s); the contract wants one start-up line
    // (docs/api.md §10, logged below), so Fastify's are muted for the duration of listen().
    const level = app.log.level;
    app.log.level = 'warn';
    try {
      await app.listen({ port: config.port, host: config.host });
    } finally {
      app.log.level = level;
    }
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    const hostForUrl = config.host.includes(':') ? `[${config.host}]` : config.host;
    url = `http://${hostForUrl === '0.0.0.0' ? '127.0.0.1' : hostForUrl}:${port}`;
    if (config.baseUrlFromPort) config.baseUrl = `http://localhost:${port}`;

    // ROOST_SMTP_PORT=0 disables SMTP (docs/api.md §8); a test asks for any free port via options.smtp.port.
    smtp =
      config.smtpPort !== 0 || options.smtp?.port !== undefined
        ? await startSmtpServer({ config, service, logger, metrics }, options.smtp)
        : null;
  } catch (error) {
    // A port already taken must not leave the other listener or the storage open.
    await app.close().catch(() => undefined);
    stopListening?.();
    await storage.close().catch(() => undefined);
    throw error;
  }
  const smtpPort: number | null = smtp?.port ?? null;

  const sweeper = new Sweeper(service, config.sweepIntervalMs, logger, callbacks);
  sweeper.start();

  // docs/api.md §10: the start-up line is printed whatever LOG_LEVEL says (unless silent).
  const startLogger = config.logLevel === 'silent' ? logger : logger.child({}, { level: 'info' });
  // Behind a proxy, which X-Forwarded-For entry is believed is said at start (ROOST_TRUST_PROXY).
  const clientIp = describeClientIp(config.trustProxy);
  startLogger.info(
    { http: url, baseUrl: config.baseUrl, smtpPort, storage: storage.description, clientIp },
    `Roost listening on ${url} (SMTP ${smtpPort ?? 'off'}, storage ${storage.description}` +
      `${config.trustProxy === false ? '' : `, client IP: ${clientIp}`}` +
      // Without a base URL, MCP believes loopback Host names only (DNS rebinding, docs/mcp.md).
      `${config.baseUrlFromPort ? ', no ROOST_BASE_URL: MCP takes loopback Host names only' : ''})`,
  );
  logger.flush(); // out now, not with the next block of lines (see logger.ts)

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      waiters.closeAll(); // held polls answer with what they have
      await app.close(); // stop accepting; wait for in-flight requests
      await smtp?.close(); // messages in DATA finish (their 250 means durable)
      await sweeper.stop();
      stopListening?.();
      await storage.close(); // pending group commits land first
    })());

  return { url, smtpPort, smtp, config, service, storage, waiters, metrics, app, logger, sweeper, close };
}
