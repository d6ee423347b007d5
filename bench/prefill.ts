// A large database for the "does it slow down as it grows" figure: many addresses and
// many events, written directly through SqliteStorage (the same code and schema the
// server uses), with synchronous=NORMAL because only the resulting file matters here.
import { statSync } from 'node:fs';
import { digestSecret, newAddressId, newIngressSecret, newReadToken, newSlug } from '../src/core/secrets.js';
import { SqliteStorage } from '../src/storage/sqlite/engine.js';
import { SMALL_EVENT, type BenchAddress } from './fixtures.js';

const EVENT_DATA = JSON.stringify(JSON.parse(SMALL_EVENT).data);

export interface Prefilled {
  /** Addresses whose inbox secret and read token the bench knows (spread over the file). */
  sample: BenchAddress[];
  seconds: number;
  fileMiB: number;
}

export async function prefill(path: string, addresses: number, events: number, sampleSize: number): Promise<Prefilled> {
  const startedAt = Date.now();
  const storage = new SqliteStorage(path, { synchronous: 'NORMAL' });
  const ids: string[] = [];
  const sample: BenchAddress[] = [];
  const every = Math.max(1, Math.floor(addresses / sampleSize));
  for (let i = 0; i < addresses; i++) {
    const id = newAddressId();
    const secret = newIngressSecret();
    const token = newReadToken();
    const slug = newSlug();
    await storage.insertAddress({
      id,
      slug,
      name: 'Untitled',
      taskId: null,
      email: `${slug}@localhost`,
      createdAt: Date.now(),
      expiresAt: null,
      readTokenDigest: digestSecret(token),
      ingressSecretDigest: digestSecret(secret),
      previousIngressDigest: null,
      previousIngressUntil: null,
      hasSender: false,
    });
    ids.push(id);
    if (i % every === 0 && sample.length < sampleSize) {
      sample.push({
        id,
        readToken: token,
        email: `${slug}@localhost`,
        inboxPath: `/api/v1/inbox/${id}/${secret}`,
        eventsPath: `/api/v1/addresses/${id}/events`,
      });
    }
  }
  // Round-robin over the addresses, a thousand appends per group commit.
  const BATCH = 1000;
  for (let done = 0; done < events; done += BATCH) {
    const appends: Promise<unknown>[] = [];
    for (let j = done; j < Math.min(events, done + BATCH); j++) {
      appends.push(
        storage.appendEvent({
          event: {
            addressId: ids[j % addresses],
            type: 'bench.ping',
            source: 'https',
            dataJson: EVENT_DATA,
            metadataJson: null,
            dedupeKey: null,
            keyScope: 'http',
            createdAt: Date.now(),
          },
          capacity: 1000,
        }),
      );
    }
    await Promise.all(appends);
  }
  await storage.close();
  return { sample, seconds: (Date.now() - startedAt) / 1000, fileMiB: statSync(path).size / 2 ** 20 };
}
