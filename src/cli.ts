#!/usr/bin/env node
// The `roost` command (CONTRACT §11).
import { loadConfig, ConfigError } from './config.js';
import { startRoost } from './server.js';

async function serve(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`roost: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  const roost = await startRoost(config);
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

const command = process.argv[2];
if (command === 'serve') {
  serve().catch((error) => {
    process.stderr.write(`roost: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
} else {
  process.stderr.write('usage: roost serve\n');
  process.exit(2);
}
