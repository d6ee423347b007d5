// The `roost` command (docs/api.md §11): `serve` runs the service; the other commands are a
// client of a running one, built on the SDK in ./client. One module per command (or command
// group) in ./cli. Output contract: stdout carries JSON only (one object a line when piped);
// progress and summaries go to stderr, and only when stderr is a terminal. Exit status:
// 0 done, 1 failed (one line on stderr), 2 bad usage.
// The Node.js version is checked first, before any other module loads.
import './require-node.js';
import { Command, CommanderError } from 'commander';
import { RoostError, RoostNetworkError } from './client/errors.js';
import { registerAddress, registerUpdate } from './cli/address.js';
import { registerCallback } from './cli/callback.js';
import { registerCreate } from './cli/create.js';
import { VERSION } from './cli/credentials.js';
import { registerAck, registerEvents } from './cli/events.js';
import { UsageError } from './cli/input.js';
import { registerListen } from './cli/listen.js';
import { registerMigrate } from './cli/migrate.js';
import { registerRotate } from './cli/rotate.js';
import { registerSend } from './cli/send.js';
import { registerSender } from './cli/sender.js';
import { isServing, registerServe } from './cli/serve.js';
import { registerInspect, registerViewTokens } from './cli/view-tokens.js';

function buildProgram(): Command {
  const program = new Command('roost')
    .description('Return addresses for software agents: run the service, or use one from the command line.')
    .version(VERSION)
    .exitOverride()
    .configureOutput({ outputError: (text, write) => write(`roost: ${text.replace(/^error: /, '')}`) })
    .showHelpAfterError('(add --help for usage)');

  // In this order in --help.
  registerServe(program);
  registerMigrate(program);
  registerCreate(program);
  registerAddress(program);
  registerEvents(program);
  registerAck(program);
  registerUpdate(program);
  registerRotate(program);
  registerViewTokens(program);
  registerInspect(program);
  registerSender(program);
  registerSend(program);
  registerListen(program);
  registerCallback(program);
  return program;
}

function fail(error: unknown): never {
  if (error instanceof UsageError) {
    process.stderr.write(`roost: ${error.message}\n`);
    process.exit(2);
  }
  if (error instanceof RoostNetworkError) process.stderr.write(`roost: ${error.message}\n`);
  else if (error instanceof RoostError) process.stderr.write(`roost: ${error.code}: ${error.message}\n`);
  else process.stderr.write(`roost: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}

// A reader that stops early (`roost events --follow | head -1`) is not a failure.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  fail(error);
});

try {
  await buildProgram().parseAsync(process.argv);
  // The client commands are done here; idle keep-alive sockets must not hold the process.
  // `serve` keeps running until a signal stops it.
  if (!isServing()) process.exit(0);
} catch (error) {
  if (error instanceof CommanderError) process.exit(error.exitCode === 0 ? 0 : 2);
  fail(error);
}
