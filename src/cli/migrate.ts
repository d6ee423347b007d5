// `roost migrate` (docs/scale-out.md § Deploying): the database's schema brought to this
// build's version, with the same flags and variables as `roost serve`.
import type { Command } from 'commander';
import { printJson } from './output.js';
import { configFromFlags, serveOptions } from './serve.js';

export function registerMigrate(program: Command): void {
  const migrate = program
    .command('migrate')
    .description(
      "bring the database's schema to this version of Roost, then exit (run before serve; see docs/scale-out.md)",
    )
    .action(migrateCommand);
  for (const option of serveOptions()) migrate.addOption(option);
}

/**
 * `roost migrate`: brings the database's schema to this build's version, then exits (JSON
 * on stdout: engine, from, to). Run it with a role that owns the schema before starting
 * `roost serve` as one that may only read and write rows (docs/scale-out.md § Deploying).
 */
async function migrateCommand(flags: Record<string, string | boolean | undefined>, command: Command): Promise<void> {
  const config = configFromFlags(flags, command);
  const [{ migrateStorage }, { createLogger }] = await Promise.all([
    import('../storage/open.js'),
    import('../logger.js'),
  ]);
  // Waiting for the database is logged on stderr: stdout carries the JSON result alone.
  const logger = createLogger(config.logLevel, process.stderr);
  for (const warning of config.warnings ?? []) logger.warn(warning);
  printJson(await migrateStorage(config, logger));
}
