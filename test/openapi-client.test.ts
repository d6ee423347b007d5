// A client generated from the served document (openapi-typescript + openapi-fetch, as a
// user would generate it) type-checks strictly and runs the README's walk-through — create
// without a body, get, deliver with a key, repeat, read, long-poll, ack, delete and the
// error cases — using the document's named types (Address, Event, EventPage, Error…).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import openapiTS, { astToString } from 'openapi-typescript';
import { startTestServer, type TestServer } from './helpers/server.js';

const run = promisify(execFile);

/** The walk-through as a user of the generated client writes it. */
const WALK = `import createClient from 'openapi-fetch';
import type { components, paths } from './openapi.js';

type Schemas = components['schemas'];
type Address = Schemas['Address'];
type CreateAddress = Schemas['CreateAddress'];
type CreateAddressResponse = Schemas['CreateAddressResponse'];
type AddressResponse = Schemas['AddressResponse'];
type Event = Schemas['Event'];
type CreateEvent = Schemas['CreateEvent'];
type EventPage = Schemas['EventPage'];
type EventResponse = Schemas['EventResponse'];
type EventDeliveryResponse = Schemas['EventDeliveryResponse'];
type ErrorBody = Schemas['Error'];

const isDelivery = (data: unknown): data is EventDeliveryResponse =>
  typeof data === 'object' && data !== null && 'event' in data && 'duplicate' in data;

function check(condition: boolean, what: string): asserts condition {
  if (!condition) throw new Error('walk-through: ' + what);
}

export async function walk(baseUrl: string): Promise<string[]> {
  const client = createClient<paths>({ baseUrl });
  const steps: string[] = [];

  // 1. Create without a body, then with one.
  const bare = await client.POST('/api/v1/addresses');
  check(bare.response.status === 201 && bare.data !== undefined, 'create without a body');
  const request: CreateAddress = { name: 'refund for order 42', task_id: 'job-7', expires_in_seconds: 86400 };
  const created = await client.POST('/api/v1/addresses', { body: request });
  check(created.data !== undefined, 'create');
  const saved: CreateAddressResponse = created.data;
  const address: Address = saved.address;
  const auth = { Authorization: 'Bearer ' + saved.credentials.read_token };
  const [, , , , addressId, secret] = new URL(saved.endpoints.inbox_url).pathname.split('/');
  check(addressId === address.id, 'the inbox URL names the address');
  steps.push('created ' + address.id);

  // 2. Get it.
  const got = await client.GET('/api/v1/addresses/{addressId}', { params: { path: { addressId } }, headers: auth });
  check(got.data !== undefined, 'get');
  const shown: AddressResponse = got.data;
  check(shown.address.taskId === 'job-7' && shown.address.createdAt === address.createdAt, 'the same address');

  // 3. Deliver with a key, then repeat.
  const inbox = { params: { path: { addressId, secret }, header: { 'idempotency-key': 'refund 42' } } };
  const refund: CreateEvent = { type: 'refund.succeeded', data: { order: 42, amount: 1999 } };
  const delivered = await client.POST('/api/v1/inbox/{addressId}/{secret}', { ...inbox, body: refund });
  // 200 may also be a sender's URL handshake (text or JSON) on an inbox with a sender set:
  // the answer to a CreateEvent is told apart by its shape.
  check(delivered.response.status === 202 && isDelivery(delivered.data), 'deliver');
  const first: EventDeliveryResponse = delivered.data;
  const repeated = await client.POST('/api/v1/inbox/{addressId}/{secret}', { ...inbox, body: refund });
  check(repeated.response.status === 200 && isDelivery(repeated.data), 'repeat');
  check(repeated.data.duplicate && repeated.data.event.id === first.event.id, 'the repeat is the same event');
  steps.push('delivered ' + first.event.id);

  // 4. Read by cursor.
  const events = { params: { path: { addressId }, query: { after: 0, limit: 50, wait: 0 } }, headers: auth };
  const read = await client.GET('/api/v1/addresses/{addressId}/events', events);
  check(read.data !== undefined, 'read');
  const page: EventPage = read.data;
  const event: Event = page.events[0];
  check(page.events.length === 1 && event.dedupe_key === 'refund 42' && page.next_cursor === 1, 'the page');

  // 5. Long-poll: held until the next delivery (or answered at once if it came first).
  const held = client.GET('/api/v1/addresses/{addressId}/events', {
    params: { path: { addressId }, query: { after: page.next_cursor, wait: 25 } },
    headers: auth,
  });
  await client.POST('/api/v1/inbox/{addressId}/{secret}', {
    params: { path: { addressId, secret } },
    body: { type: 'build.done', dedupe_key: 'invoice #7 / März' },
  });
  const woken = await held;
  check(woken.data?.events[0]?.type === 'build.done', 'the long-poll');
  steps.push('long-polled ' + woken.data.events[0].id);

  // 6. Acknowledge; unacked=1 then has one event left.
  const acked = await client.POST('/api/v1/addresses/{addressId}/events/{eventId}/ack', {
    params: { path: { addressId, eventId: event.id } },
    headers: auth,
  });
  check(acked.data !== undefined, 'ack');
  const ack: EventResponse = acked.data;
  check(typeof ack.event.acknowledged_at === 'string', 'acknowledged_at');
  const unacked = await client.GET('/api/v1/addresses/{addressId}/events', {
    params: { path: { addressId }, query: { unacked: '1' } },
    headers: auth,
  });
  check(unacked.data?.events.length === 1, 'unacked=1');

  // 7. Error cases, typed as Error.
  const wrongToken = await client.GET('/api/v1/addresses/{addressId}', {
    params: { path: { addressId } },
    headers: { Authorization: 'Bearer roost_read_wrong' },
  });
  const refused: ErrorBody | undefined = wrongToken.error;
  check(wrongToken.response.status === 401 && refused?.error.code === 'unauthorized', '401');
  const mismatch = await client.POST('/api/v1/inbox/{addressId}/{secret}', {
    params: { path: { addressId, secret }, header: { 'idempotency-key': 'one' } },
    body: { dedupe_key: 'two' },
  });
  check(mismatch.error?.error.code === 'idempotency_key_mismatch', '400 idempotency_key_mismatch');
  const unknown = await client.POST('/api/v1/inbox/{addressId}/{secret}', {
    params: { path: { addressId, secret: 'roost_ingress_wrong' } },
    body: {},
  });
  check(unknown.response.status === 404 && unknown.error?.error.code === 'inbox_not_found', '404 inbox_not_found');
  steps.push('errors ' + [401, 400, 404].join(','));

  // 8. Delete; then it is gone.
  const deleted = await client.DELETE('/api/v1/addresses/{addressId}', { params: { path: { addressId } }, headers: auth });
  check(deleted.response.status === 204, 'delete');
  const gone = await client.GET('/api/v1/addresses/{addressId}', { params: { path: { addressId } }, headers: auth });
  check(gone.response.status === 404 && gone.error?.error.code === 'address_not_found', '404 after delete');
  steps.push('deleted');
  return steps;
}
`;

describe('a client generated from the document', () => {
  let server: TestServer;
  let dir: string;

  before(async () => {
    server = await startTestServer('sqlite');
    // Inside the project, so that the generated code resolves openapi-fetch as a user's would.
    mkdirSync(resolve('node_modules/.cache'), { recursive: true });
    dir = mkdtempSync(join(resolve('node_modules/.cache'), 'roost-client-'));
    const document = await (await fetch(`${server.url}/api/v1/openapi.json`)).text();
    writeFileSync(join(dir, 'openapi.d.ts'), astToString(await openapiTS(document)));
    writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
    writeFileSync(join(dir, 'walk.ts'), WALK);
  });
  after(async () => {
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** tsc's complaints about `file`, or '' when it type-checks under --strict. */
  const typecheck = (file: string) =>
    run(
      resolve('node_modules/.bin/tsc'),
      ['--ignoreConfig', '--noEmit', '--strict', '--skipLibCheck', '--module', 'nodenext', '--target', 'es2022', file],
      { cwd: dir },
    ).then(
      () => '',
      (error: { stdout?: string }) => error.stdout || 'tsc failed',
    );

  it('type-checks under --strict with the named types, and would not with a misnamed field', async () => {
    assert.equal(await typecheck('walk.ts'), '');
    // The check can fail: the Address shape is camelCase, as the specification has it.
    writeFileSync(
      join(dir, 'misnamed.ts'),
      `import type { components } from './openapi.js';\nexport const at: components['schemas']['Address']['created_at'] = '';\n`,
    );
    assert.match(await typecheck('misnamed.ts'), /created_at/);
  });

  it('runs the walk-through against the service', async () => {
    const { walk } = (await import(pathToFileURL(join(dir, 'walk.ts')).href)) as {
      walk: (baseUrl: string) => Promise<string[]>;
    };
    const steps = await walk(server.url);
    assert.equal(steps.length, 5);
    assert.equal(steps.at(-1), 'deleted');
  });
});
