// What the scenarios need on a running Roost: return addresses created through the public
// API, and single HTTP requests over keep-alive sockets with their timing.
import http from 'node:http';

export interface BenchAddress {
  id: string;
  readToken: string;
  email: string;
  /** Path of the inbox URL (the origin of the bench server is not the base URL). */
  inboxPath: string;
  eventsPath: string;
}

export const JSON_HEADERS = { 'content-type': 'application/json' };

/** A small delivery, like a typical webhook notification. */
export const SMALL_EVENT = JSON.stringify({
  type: 'bench.ping',
  data: { status: 'done', job: 'build-1234', ok: true, attempt: 1 },
});

/**
 * A copy of `items` in random order (Fisher–Yates). Load rotates through addresses in this
 * order, not in the order they were created: SQLite keys addresses by an integer given in
 * creation order, and consecutive requests to consecutive addresses would share index
 * pages, which deliveries from independent senders do not.
 */
export function shuffled<T>(items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

export interface Reply {
  status: number;
  body: string;
}

/** One request; `agent` decides whether sockets are reused. */
export function send(
  url: string,
  method: string,
  headers: Record<string, string>,
  body: string | undefined,
  agent: http.Agent,
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Runs `task` for every item with at most `concurrency` in flight. */
export async function inParallel<T, R>(
  items: T[],
  concurrency: number,
  task: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await task(items[index], index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return results;
}

export async function createAddresses(url: string, count: number): Promise<BenchAddress[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
  try {
    return await inParallel(
      Array.from({ length: count }, (_, i) => i),
      16,
      async (i) => {
        const reply = await send(
          `${url}/api/v1/addresses`,
          'POST',
          JSON_HEADERS,
          JSON.stringify({ name: `bench ${i}` }),
          agent,
        );
        if (reply.status !== 201) throw new Error(`create address answered ${reply.status}: ${reply.body}`);
        const created = JSON.parse(reply.body);
        return {
          id: created.address.id,
          readToken: created.credentials.read_token,
          email: created.address.email,
          inboxPath: new URL(created.endpoints.inbox_url).pathname,
          eventsPath: new URL(created.endpoints.events_url).pathname,
        };
      },
    );
  } finally {
    agent.destroy();
  }
}

/** Delivers `count` small events to one address (to fill it for the reading scenario). */
export async function fill(url: string, address: BenchAddress, count: number): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
  try {
    await inParallel(
      Array.from({ length: count }, (_, i) => i),
      32,
      async () => {
        const reply = await send(url + address.inboxPath, 'POST', JSON_HEADERS, SMALL_EVENT, agent);
        if (reply.status !== 202) throw new Error(`fill answered ${reply.status}: ${reply.body}`);
      },
    );
  } finally {
    agent.destroy();
  }
}

// All the bench's load comes from one peer, 127.0.0.1, where the per-client caps (HTTP
// connections and held polls, SMTP connections and messages) stand for many clients:
// raised, not removed, so that their accounting is still paid.
export const MANY_CLIENTS = {
  ROOST_MAX_CONNECTIONS_PER_IP: '1000000',
  ROOST_MAX_WAITERS_PER_IP: '1000000',
  ROOST_SMTP_MAX_CONNECTIONS_PER_IP: '10000',
  ROOST_SMTP_MESSAGE_RATE: '1000000/sec',
};

/** The environment every Roost child gets: production defaults, bench-friendly limits. */
export function roostEnv(dbPath: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PORT: '0',
    ROOST_DB: dbPath,
    ROOST_SMTP_PORT: '0',
    // Provisioning is not what is measured; the default 20/min would throttle set-up.
    ROOST_CREATE_RATE: '1000000/sec',
    LOG_LEVEL: 'info',
    ...extra,
  };
}
