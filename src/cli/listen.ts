// `roost listen --forward URL`: each event POSTed to URL in order, acknowledged on 2xx, the
// cursor kept in a file so that a restart resumes.
import { Option, type Command } from 'commander';
import { readCursorFile, writeCursorFile } from '../client/cursor-file.js';
import { appendDeadLetter } from '../client/dead-letter.js';
import { forwardEvents } from '../client/forwarder.js';
import { addressClient, withCredentials, type ServiceFlags } from './credentials.js';
import { filterOf, httpUrl, stopSignal, UsageError, withFilters, type FilterFlags } from './input.js';
import { note, printable, printLine, seconds } from './output.js';

export function registerListen(program: Command): void {
  withFilters(withCredentials(program.command('listen')))
    .description(
      'forward each event, in order, as a JSON POST to URL; acknowledge on 2xx, retry otherwise, resume after a restart',
    )
    .requiredOption('--forward <url>', 'where to POST each event', httpUrl)
    .option('--cursor-file <file>', 'where the cursor is kept [.roost-cursor-<addressId>]')
    .option('--include-acked', 'also forward events already acknowledged')
    .addOption(
      new Option('--on-fail <action>', 'when the target can never take an event: park it, skip it, or stop')
        .choices(['park', 'skip', 'stop'])
        .default('park'),
    )
    .option('--dead-letter <file>', 'where parked events go, one JSON line each [.roost-dead-letter-<addressId>.jsonl]')
    .action(listen);
}

type OnFail = 'park' | 'skip' | 'stop';

async function listen(
  flags: ServiceFlags & {
    forward: string;
    cursorFile?: string;
    includeAcked?: boolean;
    onFail: OnFail;
    deadLetter?: string;
  } & FilterFlags,
) {
  const client = await addressClient(flags);
  const addressId = client.addressId!;
  const cursorFile = flags.cursorFile ?? `.roost-cursor-${addressId}`;
  const deadLetter = flags.deadLetter ?? `.roost-dead-letter-${addressId}.jsonl`;
  let after: number;
  try {
    after = (await readCursorFile(cursorFile, addressId)) ?? 0;
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const signal = stopSignal();
  note(`Forwarding ${addressId} → ${flags.forward}, after #${after} (cursor in ${cursorFile}; Ctrl-C to stop)`);
  // Event ids and types come from senders: printed only with control characters replaced.
  const stopped = await forwardEvents({
    client,
    target: flags.forward,
    after,
    filter: filterOf(flags),
    signal,
    includeAcknowledged: flags.includeAcked,
    onFail: flags.onFail,
    park: (event, reason) => appendDeadLetter(deadLetter, event, reason),
    saveCursor: (sequence) => writeCursorFile(cursorFile, addressId, sequence),
    onForwarded: (event, status, attempts) => {
      printLine({ id: event.id, sequence: event.sequence, type: event.type, status, attempts });
      note(
        `#${event.sequence} ${printable(event.id)} ${printable(event.type)} → ${status}${attempts > 1 ? ` after ${attempts} attempts` : ''}`,
      );
    },
    onPermanentFailure: (event, reason) => {
      const outcome = flags.onFail === 'park' ? 'parked' : 'skipped';
      printLine({ id: event.id, sequence: event.sequence, type: event.type, [outcome]: reason });
      note(
        `#${event.sequence} ${printable(event.id)} ${printable(event.type)}: ${printable(reason)}; ${outcome}` +
          (outcome === 'parked' ? ` in ${deadLetter}` : ''),
      );
    },
    onSkipped: (event) => note(`#${event.sequence} ${printable(event.id)} already acknowledged; skipped`),
    onRetry: (event, reason, delay) =>
      note(`${event ? `#${event.sequence}: ` : ''}${printable(reason)}; retrying in ${seconds(delay)}`),
  });
  if (stopped) {
    throw new Error(
      `event #${stopped.event.sequence} cannot be forwarded (${printable(stopped.reason)}); stopped before it (--on-fail stop)`,
    );
  }
  note('Stopped.');
}
