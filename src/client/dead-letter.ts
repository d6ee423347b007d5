// Where `roost listen` parks an event its target can never take (a permanent failure):
// one JSON line per event, appended, so that nothing behind it waits and nothing is lost.
import { appendFile } from 'node:fs/promises';
import type { Event } from '../contract/schemas.js';

export async function appendDeadLetter(path: string, event: Event, reason: string, now = new Date()): Promise<void> {
  const line = `${JSON.stringify({ parked_at: now.toISOString(), reason, event })}\n`;
  // 0600: event data may be as private as the queue it came from.
  await appendFile(path, line, { mode: 0o600 });
}
