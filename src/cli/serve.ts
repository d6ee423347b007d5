// `roost serve` (docs/api.md §11.1): runs the service, with a flag for every variable of
// README.md § Configuration, each overriding its variable.
import { Option, type Command } from 'commander';
import { ConfigError, ENV_VARS, loadConfig } from '../config.js';
import { UsageError } from './input.js';

/** Set once `serve` has started: the process then lives until a signal. */
let serving = false;

/** Whether `serve` has started (the entry then keeps the process running). */
export const isServing = () => serving;

export function registerServe(program: Command): void {
  const serveCommand = program
    .command('serve')
    .description('run the service (HTTP, SMTP, MCP); every flag overrides its environment variable')
    .action(serve);
  for (const option of serveOptions()) serveCommand.addOption(option);
}

/** The configuration from the environment, each flag given overriding its variable. */
export function configFromFlags(flags: Record<string, string | boolean | undefined>, command: Command) {
  const fromFlags: Record<string, string> = {};
  for (const option of command.options) {
    const value = flags[option.attributeName()];
    if (option.envVar !== undefined && value !== undefined) {
      fromFlags[option.envVar] = value === true ? 'true' : String(value);
    }
  }
  try {
    return loadConfig({ ...process.env, ...fromFlags });
  } catch (error) {
    if (error instanceof ConfigError) throw new UsageError(error.message);
    throw error;
  }
}

async function serve(flags: Record<string, string | boolean | undefined>, command: Command): Promise<void> {
  // Loaded here, so that the client commands start without the server's dependencies.
  const { startRoost } = await import('../server.js');
  const config = configFromFlags(flags, command);
  const roost = await startRoost(config);
  serving = true;
  const stop = (signal: string) => {
    roost.logger.info({ signal }, 'shutting down');
    roost.close().then(
      () => process.exit(0),
      (err) => {
        roost.logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}

type EnvVar = (typeof ENV_VARS)[number];

/**
 * `roost serve` has a flag for every variable of README.md § Configuration, named after it
 * (`ROOST_` dropped, `--max-body-bytes`); these keep shorter names.
 */
const SERVE_FLAG_NAMES: Partial<Record<EnvVar, string>> = {
  ROOST_DEFAULT_TTL_SECONDS: 'default-ttl',
  ROOST_MAX_TTL_SECONDS: 'max-ttl',
};

/** The value placeholder and help of the most used flags; the others say which variable they set. */
const SERVE_FLAG_HELP: Partial<Record<EnvVar, [string, string]>> = {
  PORT: ['<n>', 'HTTP port; 0 picks a free one [3000]'],
  HOST: ['<host>', 'HTTP interface [127.0.0.1]'],
  ROOST_BASE_URL: ['<url>', 'public origin used in returned URLs'],
  ROOST_DB: ['<file>', 'SQLite file [./data/roost.db]'],
  DATABASE_URL: ['<url>', 'postgres://… — use PostgreSQL instead'],
  ROOST_SMTP_PORT: ['<n>', 'inbound SMTP port, 0 disables [2525]'],
  ROOST_MAIL_DOMAIN: ['<domain>', 'domain of the addresses [localhost]'],
  ROOST_CREATE_RATE: ['<rate>', 'creations per client IP, N/sec|min|hour [20/min]'],
  ROOST_TRUST_PROXY: ['[value]', 'believe X-Forwarded-For: true, hop count or addresses'],
  ROOST_MAX_BODY_BYTES: ['<size>', 'largest delivery, e.g. 256KiB'],
  ROOST_MAX_EMAIL_BYTES: ['<size>', 'largest email, e.g. 10MiB'],
  ROOST_DEFAULT_TTL_SECONDS: ['<seconds>', 'lifetime when a creation gives none'],
  ROOST_MAX_TTL_SECONDS: ['<seconds>', 'longest lifetime allowed'],
  LOG_LEVEL: ['<level>', 'fatal|error|warn|info|debug|trace|silent [info]'],
};

export function serveOptions(): Option[] {
  return ENV_VARS.map((name) => {
    const flag =
      SERVE_FLAG_NAMES[name] ??
      name
        .replace(/^ROOST_/, '')
        .toLowerCase()
        .replaceAll('_', '-');
    const [value, help] = SERVE_FLAG_HELP[name] ?? ['<value>', 'see README.md § Configuration'];
    // .env() shows the variable in --help; the value itself is read by loadConfig.
    return new Option(`--${flag} ${value}`, help).env(name);
  });
}
