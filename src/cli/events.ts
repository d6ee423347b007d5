// `roost events` (a page, or --follow by long-polling) and `roost ack`.
import type { Command } from 'commander';
import { retryTransient } from '../client/retry.js';
import type { Event } from '../contract/schemas.js';
import { addressClient, withCredentials, type ServiceFlags } from './credentials.js';
import { filterOf, stopSignal, wholeNumber, withFilters, type FilterFlags } from './input.js';
import { note, printJson, printLine, seconds } from './output.js';

export function registerEvents(program: Command): void {
  withFilters(withCredentials(program.command('events')))
    .description(
      'print events, one JSON object a line; with filters, only matching ones (a filtered cursor belongs to that filter: to resume everything use --unacked or your unfiltered cursor)',
    )
    .option('--after <n>', 'start after this sequence', wholeNumber(0), 0)
    .option('--limit <n>', 'print at most N events', wholeNumber(1))
    .option('--wait <seconds>', 'long-poll up to S seconds (0–25) when nothing is new', wholeNumber(0, 25))
    .option('--follow', 'keep long-polling for new events until interrupted')
    .option('--ack', 'acknowledge each event once printed')
    .option('--unacked', 'only events not acknowledged yet (no cursor needed: whatever is not handled)')
    .action(events);
}

export function registerAck(program: Command): void {
  withCredentials(program.command('ack'))
    .description('acknowledge one event and print it')
    .argument('<event-id>', 'the event (evt_…)')
    .action(async (eventId: string, flags: ServiceFlags) =>
      printJson({ event: await (await addressClient(flags)).ack(eventId) }),
    );
}

async function events(
  flags: ServiceFlags & {
    after: number;
    limit?: number;
    wait?: number;
    follow?: boolean;
    ack?: boolean;
    unacked?: boolean;
  } & FilterFlags,
) {
  const client = await addressClient(flags);
  const signal = stopSignal();
  const unacked = flags.unacked === true;
  const filter = filterOf(flags);
  let printed = 0;
  let cursor = flags.after;
  let latest: number | undefined;
  const take = async (event: Event) => {
    printLine(event);
    printed += 1;
    cursor = event.sequence;
    if (flags.ack) await retryTransient(() => client.ack(event.id, { signal }), { signal });
  };

  if (flags.follow) {
    note(
      `Following ${client.addressId} after ${cursor}${unacked ? ', unacknowledged only' : ''}${flags.ack ? ', acknowledging' : ''} (Ctrl-C to stop)`,
    );
    const stream = client.events({
      ...filter,
      after: cursor,
      unacked,
      wait: Math.max(1, flags.wait ?? 25),
      signal,
      onRetry: (error, delay) => note(`${error.message}; retrying in ${seconds(delay)}`),
    });
    for await (const event of stream) {
      await take(event);
      if (flags.limit !== undefined && printed >= flags.limit) break;
    }
  } else {
    // Read on until caught up (or --limit events); only the first request waits.
    let wait = flags.wait ?? 0;
    for (;;) {
      const pageSize = Math.min(100, flags.limit === undefined ? 100 : flags.limit - printed);
      const page = await client
        .listEvents({ ...filter, after: cursor, limit: pageSize, wait, unacked, signal })
        .catch((error) => {
          if (signal.aborted) return undefined;
          throw error;
        });
      if (!page) break;
      latest = page.latest_sequence;
      for (const event of page.events) await take(event);
      cursor = Math.max(cursor, page.next_cursor);
      wait = 0;
      if (!page.has_more || (flags.limit !== undefined && printed >= flags.limit)) break;
    }
  }
  note(
    `${printed} event${printed === 1 ? '' : 's'}${flags.ack && printed ? ', acknowledged' : ''}; next: --after ${cursor}` +
      (latest === undefined ? '' : ` (latest sequence ${latest})`),
  );
  // A cursor past the end of the queue would silently skip every event up to it (docs/api.md §4).
  // Said even when piped: a warning, not progress.
  if (latest !== undefined && flags.after > latest)
    process.stderr.write(
      `warning: --after ${flags.after} is past the latest sequence ${latest}: events ${latest + 1} to ${flags.after} would never be shown. Use --after 0, or --unacked for whatever is not acknowledged yet.\n`,
    );
}
