// The built `roost` bin (dist/cli.js) run as a child process against a real server:
// create/--save, send and duplicate send, events --wait --ack, listen with a failing sink
// and a restart, and the exit status contract (0 done, 1 failed, 2 bad usage).
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { ENV_VARS } from '../src/config.js';
import type { CreateAddressResponse, Event, EventDeliveryResponse } from '../src/contract/schemas.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const BIN = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

interface Running {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves once stdout holds `count` lines, failing if the process exits first. */
  lines(count: number): Promise<string[]>;
  exit(): Promise<number | null>;
}

describe('roost CLI', () => {
  let server: TestServer;
  let dir: string;
  let baseEnv: Record<string, string>;

  // The child sees no ROOST_* variable of ours, and reaches the server at its real origin.
  function start(args: string[], env: Record<string, string> = {}, input?: string): Running {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? '', ...baseEnv, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let onOutput = () => {};
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      onOutput();
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdin.end(input);
    const exited = once(child, 'exit').then(([code]) => code as number | null);
    const lines = () => stdout.split('\n').filter(Boolean);
    return {
      child,
      stdout: () => stdout,
      stderr: () => stderr,
      exit: () => exited,
      lines: (count) =>
        Promise.race([
          new Promise<string[]>((resolve) => {
            onOutput = () => lines().length >= count && resolve(lines());
            onOutput();
          }),
          exited.then((code) =>
            Promise.reject(new Error(`roost ${args[0]} exited ${code} early:\n${stdout}\n${stderr}`)),
          ),
        ]),
    };
  }

  async function run(args: string[], env: Record<string, string> = {}, input?: string): Promise<Run> {
    const running = start(args, env, input);
    const code = await running.exit();
    return { code, stdout: running.stdout(), stderr: running.stderr() };
  }

  /** `roost create --save FILE`; returns the saved response and its inbox at the server's real origin. */
  async function createSaved(file: string) {
    const result = await run(['create', '--name', 'cli test', '--save', file]);
    assert.equal(result.code, 0, result.stderr);
    const created = JSON.parse(result.stdout) as CreateAddressResponse;
    return { created, inbox: `${server.url}${new URL(created.endpoints.inbox_url).pathname}` };
  }

  before(async () => {
    server = await startTestServer('sqlite');
    dir = mkdtempSync(join(tmpdir(), 'roost-cli-'));
    baseEnv = { ROOST_URL: server.url };
  });
  after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('create prints the creation response and --save writes it with mode 0600, never over a file', async () => {
    const result = await run([
      'create',
      '--name',
      'saved',
      '--task-id',
      'T-9',
      '--expires-in',
      '3600',
      '--save',
      'creds.json',
    ]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stderr, '', 'nothing on stderr when it is not a terminal');
    const printed = JSON.parse(result.stdout) as CreateAddressResponse;
    assert.equal(printed.address.taskId, 'T-9');
    assert.ok(printed.address.expiresAt);
    const path = join(dir, 'creds.json');
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.deepEqual(JSON.parse(readFileSync(path, 'utf8')), printed);

    const again = await run(['create', '--save', 'creds.json']);
    assert.equal(again.code, 2);
    assert.match(again.stderr, /exists; pass --force/);
    assert.equal(again.stdout, '');
    assert.deepEqual(JSON.parse(readFileSync(path, 'utf8')), printed, 'the saved file is untouched');

    // Without --url or ROOST_URL, the saved credentials say where the service is.
    const local = {
      ...printed,
      endpoints: { ...printed.endpoints, events_url: `${server.url}/api/v1/addresses/${printed.address.id}/events` },
    };
    writeFileSync(join(dir, 'local.json'), JSON.stringify(local));
    const got = await run(['get', '--credentials', 'local.json'], { ROOST_URL: '' });
    assert.equal(got.code, 0, got.stderr);
    assert.equal(JSON.parse(got.stdout).address.id, printed.address.id);
  });

  test('sender set|get|clear: secrets from standard input or the environment, never printed (docs/api.md §3.2)', async () => {
    const { inbox } = await createSaved('sender.json');
    const creds = ['--credentials', 'sender.json'];
    const none = await run(['sender', 'get', ...creds]);
    assert.equal(none.code, 0, none.stderr);
    assert.deepEqual(JSON.parse(none.stdout), { sender: null });

    const missing = await run(['sender', 'set', 'github', ...creds]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /no secret/);

    const fromStdin = await run(
      ['sender', 'set', 'hmac_sha256', '--secrets-stdin', '--header', 'X-Sig', '--prefix', 'sha256=', ...creds],
      {},
      'stdin-newest\n\nstdin-older\n',
    );
    assert.equal(fromStdin.code, 0, fromStdin.stderr);
    const set = JSON.parse(fromStdin.stdout).sender;
    assert.equal(set.secrets, 2);
    assert.equal(set.header, 'x-sig');
    assert.ok(!fromStdin.stdout.includes('stdin-newest') && !fromStdin.stderr.includes('stdin-newest'));
    const body = '{"paid":true}';
    const signed = `sha256=${createHmac('sha256', 'stdin-older').update(body).digest('hex')}`;
    const post = (signature: string) =>
      fetch(inbox, { method: 'POST', headers: { 'content-type': 'application/json', 'x-sig': signature }, body });
    assert.equal((await post(signed)).status, 202);

    const fromEnv = await run(['sender', 'set', 'github', '--no-enforce', '--tolerance', '60', ...creds], {
      ROOST_SENDER_SECRETS: 'env-secret',
    });
    assert.equal(fromEnv.code, 0, fromEnv.stderr);
    const got = await run(['sender', 'get', ...creds]);
    const shown = JSON.parse(got.stdout).sender;
    assert.deepEqual(
      { ...shown, updated_at: 'x' },
      { provider: 'github', enforce: false, tolerance_seconds: 60, secrets: 1, updated_at: 'x' },
    );

    const refused = await run(['sender', 'set', 'github', '--secret', 'a', '--verify-token', 'v', ...creds]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /verify_token/);

    const cleared = await run(['sender', 'clear', ...creds]);
    assert.equal(cleared.code, 0, cleared.stderr);
    assert.deepEqual(JSON.parse((await run(['sender', 'get', ...creds])).stdout), { sender: null });
  });

  test('send delivers one event; a repeat with the same --key queues nothing new', async () => {
    const { created, inbox } = await createSaved('send.json');
    writeFileSync(join(dir, 'payload.json'), '{"order": 42}');
    const first = await run([
      'send',
      inbox,
      '--type',
      'order.paid',
      '--data',
      '@payload.json',
      '--metadata',
      'region=eu',
      '--key',
      'order-42',
    ]);
    assert.equal(first.code, 0, first.stderr);
    const delivered = JSON.parse(first.stdout) as EventDeliveryResponse;
    assert.equal(delivered.duplicate, false);
    assert.equal(delivered.event.type, 'order.paid');
    assert.deepEqual(delivered.event.data, { order: 42 });
    assert.deepEqual(delivered.event.metadata, { region: 'eu' });

    const repeat = await run(['send', inbox, '--data', '@-', '--key', 'order-42'], {}, '{"order": "changed"}');
    assert.equal(repeat.code, 0, repeat.stderr);
    const duplicate = JSON.parse(repeat.stdout) as EventDeliveryResponse;
    assert.equal(duplicate.duplicate, true);
    assert.equal(duplicate.event.id, delivered.event.id);

    const listed = await run(['events', '--credentials', 'send.json']);
    assert.equal(listed.code, 0, listed.stderr);
    const events = listed.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Event);
    assert.deepEqual(
      events.map((e) => e.id),
      [delivered.event.id],
    );
    assert.equal(events[0].address_id, created.address.id);
  });

  test('events --unacked prints only what is not acknowledged; a cursor past the end is warned about', async () => {
    const { inbox } = await createSaved('unacked.json');
    for (const n of [1, 2, 3]) assert.equal((await run(['send', inbox, '--data', `{"n":${n}}`])).code, 0);
    const first = await run(['events', '--credentials', 'unacked.json', '--limit', '1', '--ack']);
    assert.equal(first.code, 0, first.stderr);
    const unacked = await run(['events', '--credentials', 'unacked.json', '--unacked']);
    assert.equal(unacked.code, 0, unacked.stderr);
    assert.deepEqual(
      unacked.stdout
        .trim()
        .split('\n')
        .map((line) => (JSON.parse(line) as Event).data),
      [{ n: 2 }, { n: 3 }],
    );
    const lost = await run(['events', '--credentials', 'unacked.json', '--after', '999']);
    assert.equal(lost.code, 0, lost.stderr);
    assert.equal(lost.stdout, '');
    assert.match(lost.stderr, /--after 999 is past the latest sequence 3/);
  });

  test('events --type, --source, --data-contains and --body-contains print only matching events; a bad filter says which', async () => {
    const { inbox } = await createSaved('filters.json');
    for (const args of [
      ['--type', 'job.done', '--data', '{"job":1}'],
      ['--type', 'job.progress', '--source', 'ci', '--data', '{"job":2}'],
      ['--type', 'job.done', '--source', 'ci', '--data', '{"job":2,"body":"{\\"ok\\":true}"}'],
    ])
      assert.equal((await run(['send', inbox, ...args])).code, 0);
    const sequences = async (args: string[]) => {
      const result = await run(['events', '--credentials', 'filters.json', ...args]);
      assert.equal(result.code, 0, result.stderr);
      return result.stdout
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((line) => (JSON.parse(line) as Event).sequence);
    };
    assert.deepEqual(await sequences(['--type', 'job.*', '--data-contains', '{"job":2}']), [2, 3]);
    assert.deepEqual(await sequences(['--type', 'job.done', '--source', 'ci']), [3]);
    assert.deepEqual(await sequences(['--body-contains', '{"ok":true}']), [3]);
    const bad = await run(['events', '--credentials', 'filters.json', '--type', 'a*b']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /invalid_request: Invalid filter "type"/);
    const notJson = await run(['events', '--credentials', 'filters.json', '--data-contains', '{']);
    assert.equal(notJson.code, 2);
    assert.match(notJson.stderr, /--data-contains is not JSON/);
  });

  test('events --wait holds until an event arrives, prints it and --ack acknowledges it', async () => {
    const { inbox } = await createSaved('wait.json');
    const waiting = start(['events', '--credentials', 'wait.json', '--wait', '20', '--ack']);
    const sent = await run(['send', inbox, '--data', '{"hello":"world"}']);
    assert.equal(sent.code, 0, sent.stderr);
    assert.equal(await waiting.exit(), 0, waiting.stderr());
    const printed = waiting
      .stdout()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Event);
    assert.deepEqual(
      printed.map((e) => e.data),
      [{ hello: 'world' }],
    );

    const after = await run(['events', '--credentials', 'wait.json', '--after', '0']);
    const [event] = after.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Event);
    assert.ok(event.acknowledged_at, 'acknowledged by --ack');
    const later = await run(['events', '--credentials', 'wait.json', '--after', String(event.sequence)]);
    assert.equal(later.code, 0);
    assert.equal(later.stdout, '');
  });

  describe('listen --forward', () => {
    let sink: Server;
    let sinkUrl: string;
    const received: { sequence: number; id: string; status: number; body: Event }[] = [];
    let failNext = 1;

    before(async () => {
      // A local webhook handler that fails the first request it gets, then accepts.
      sink = createServer((request, response) => {
        let body = '';
        request.on('data', (chunk) => (body += chunk));
        request.on('end', () => {
          const status = failNext-- > 0 ? 500 : 200;
          received.push({
            sequence: Number(request.headers['x-roost-sequence']),
            id: String(request.headers['x-roost-event-id']),
            status,
            body: JSON.parse(body),
          });
          response.writeHead(status).end();
        });
      });
      sink.listen(0, '127.0.0.1');
      await once(sink, 'listening');
      sinkUrl = `http://127.0.0.1:${(sink.address() as { port: number }).port}/hook`;
    });
    after(() => new Promise<void>((resolve) => sink.close(() => resolve())));

    test(
      'forwards in order, retries a failure, acknowledges, and resumes from its cursor file after a restart',
      { timeout: 60_000 },
      async () => {
        const { created, inbox } = await createSaved('listen.json');
        const id = created.address.id;
        for (const n of [1, 2]) assert.equal((await run(['send', inbox, '--data', String(n)])).code, 0);

        const first = start(['listen', '--credentials', 'listen.json', '--forward', sinkUrl]);
        const lines = (await first.lines(2)).map((line) => JSON.parse(line));
        first.child.kill('SIGINT');
        assert.equal(await first.exit(), 0, first.stderr());
        assert.deepEqual(
          lines.map((l) => [l.sequence, l.status, l.attempts]),
          [
            [1, 200, 2],
            [2, 200, 1],
          ],
        );
        // The failed first attempt was retried before the second event was sent: no reordering.
        assert.deepEqual(
          received.map((r) => [r.sequence, r.status]),
          [
            [1, 500],
            [1, 200],
            [2, 200],
          ],
        );
        assert.equal(received[1].body.id, received[1].id);
        assert.equal(received[1].body.data, 1);
        assert.deepEqual(JSON.parse(readFileSync(join(dir, `.roost-cursor-${id}`), 'utf8')), {
          address_id: id,
          after: 2,
        });
        const listed = (await run(['events', '--credentials', 'listen.json'])).stdout
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as Event);
        assert.deepEqual(
          listed.map((e) => Boolean(e.acknowledged_at)),
          [true, true],
        );

        // Restarted — forwarding acknowledged events too, so only the cursor file prevents repeats.
        for (const n of [3, 4]) assert.equal((await run(['send', inbox, '--data', String(n)])).code, 0);
        const second = start(['listen', '--credentials', 'listen.json', '--forward', sinkUrl, '--include-acked']);
        const resumed = (await second.lines(2)).map((line) => JSON.parse(line));
        second.child.kill('SIGTERM');
        assert.equal(await second.exit(), 0, second.stderr());
        assert.deepEqual(
          resumed.map((l) => l.sequence),
          [3, 4],
        );
        assert.deepEqual(
          received.filter((r) => r.status === 200).map((r) => r.sequence),
          [1, 2, 3, 4],
          'nothing delivered twice',
        );
      },
    );
  });

  test('rotate, view-token and update: a saved credentials file follows the rotation', async () => {
    const { created, inbox } = await createSaved('rotating.json');
    const path = join(dir, 'rotating.json');
    const creds = ['--credentials', 'rotating.json'];

    const rotated = await run(['rotate', 'read-token', ...creds]);
    assert.equal(rotated.code, 0, rotated.stderr);
    const token = (JSON.parse(rotated.stdout) as { credentials: { read_token: string } }).credentials.read_token;
    assert.match(token, /^roost_read_/);
    assert.notEqual(token, created.credentials.read_token);
    const saved = JSON.parse(readFileSync(path, 'utf8')) as CreateAddressResponse;
    assert.equal(saved.credentials.read_token, token, 'the file holds the new token');
    assert.equal(saved.address.id, created.address.id, 'and everything else it held');
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.equal((await run(['get', ...creds])).code, 0, 'the next command reads the new token');
    const old = await run(['get'], {
      ROOST_ADDRESS_ID: created.address.id,
      ROOST_READ_TOKEN: created.credentials.read_token,
    });
    assert.equal(old.code, 1);
    assert.match(old.stderr, /unauthorized/);

    const inboxRotated = await run(['rotate', 'inbox-secret', '--grace', '60', ...creds]);
    assert.equal(inboxRotated.code, 0, inboxRotated.stderr);
    const newInbox = (JSON.parse(inboxRotated.stdout) as { endpoints: { inbox_url: string } }).endpoints.inbox_url;
    assert.equal((JSON.parse(readFileSync(path, 'utf8')) as CreateAddressResponse).endpoints.inbox_url, newInbox);
    assert.equal((await run(['send', inbox, '--type', 'old.in.grace'])).code, 0);

    const made = await run(['view-token', 'create', '--label', 'for a person', ...creds]);
    assert.equal(made.code, 0, made.stderr);
    const view = (JSON.parse(made.stdout) as { view_token: { id: string; token: string } }).view_token;
    assert.match(view.token, /^roost_view_/);
    const listed = await run(['view-token', 'list', ...creds]);
    assert.deepEqual(
      (JSON.parse(listed.stdout) as { view_tokens: { id: string }[] }).view_tokens.map((t) => t.id),
      [view.id],
    );
    assert.ok(!listed.stdout.includes(view.token));
    const viewer = { ROOST_ADDRESS_ID: created.address.id, ROOST_READ_TOKEN: view.token };
    assert.equal((await run(['events'], viewer)).code, 0, 'a view token reads');
    const refused = await run(['delete'], viewer);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /forbidden/);
    assert.equal((await run(['view-token', 'revoke', view.id, ...creds])).code, 0);
    assert.equal((await run(['events'], viewer)).code, 1, 'revoked at once');

    const inspect = await run(['inspect', ...creds]);
    assert.equal(inspect.code, 0, inspect.stderr);
    const link = JSON.parse(inspect.stdout) as { inspect_url: string; view_token_id: string };
    const [page, fragment] = link.inspect_url.split('#token=');
    assert.equal(new URL(page).pathname, `/inspect/${created.address.id}`);
    const linked = { ROOST_ADDRESS_ID: created.address.id, ROOST_READ_TOKEN: decodeURIComponent(fragment) };
    assert.equal((await run(['events'], linked)).code, 0, 'the link carries a working view token');
    assert.equal((await run(['delete'], linked)).code, 1, 'and a read-only one');

    const updated = await run(['update', '--name', 'renamed', '--expires-in', '600', ...creds]);
    assert.equal(updated.code, 0, updated.stderr);
    const address = (JSON.parse(updated.stdout) as { address: { name: string; expiresAt?: string } }).address;
    assert.equal(address.name, 'renamed');
    assert.ok(address.expiresAt);
    for (const args of [
      ['update', ...creds],
      ['update', '--task-id', 'x', '--clear-task-id', ...creds],
    ]) {
      const bad = await run(args);
      assert.equal(bad.code, 2, bad.stderr);
    }
  });

  test('wrong credentials fail with exit 1 and one clear line', async () => {
    const { created } = await createSaved('wrong.json');
    const result = await run(['get'], { ROOST_ADDRESS_ID: created.address.id, ROOST_READ_TOKEN: 'roost_read_wrong' });
    assert.equal(result.code, 1);
    assert.equal(result.stdout, '');
    assert.match(result.stderr, /^roost: unauthorized: [^\n]+\n$/);

    const gone = await run(['events'], { ROOST_ADDRESS_ID: 'addr_nothing', ROOST_READ_TOKEN: 'roost_read_wrong' });
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, /^roost: address_not_found: /);
  });

  test('bad usage exits 2', async () => {
    const cases: [string[], RegExp][] = [
      [['events', '--credentials', 'creds.json', '--limit', '0'], /--limit/],
      [['events', '--credentials', 'creds.json', '--wait', '26'], /--wait/],
      [['create', '--bogus'], /unknown option '--bogus'/],
      [['send', 'not-a-url'], /http\(s\) URL/],
      [['send', `${server.url}/api/v1/inbox/addr_x/roost_ingress_x`, '--data', '{oops'], /--data is not JSON/],
      [['events'], /no credentials/],
      [['listen', '--credentials', 'creds.json'], /--forward/],
      [['fly'], /unknown command/],
    ];
    for (const [args, message] of cases) {
      const result = await run(args);
      assert.equal(result.code, 2, `roost ${args.join(' ')}: ${result.stderr}`);
      assert.match(result.stderr, message);
      assert.equal(result.stdout, '');
    }
  });

  test('serve has one flag per variable of README.md § Configuration, and each flag sets its variable', async () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const section = readme.slice(
      readme.indexOf('## Configuration'),
      readme.indexOf('\n## ', readme.indexOf('## Configuration') + 1),
    );
    const documented = new Set(
      [...section.matchAll(/`(ROOST_[A-Z0-9_]+|DATABASE_URL|LOG_LEVEL|PORT|HOST)`/g)].map((m) => m[1]),
    );
    assert.deepEqual([...documented].sort(), [...ENV_VARS].sort());

    const help = await run(['serve', '--help']);
    assert.equal(help.code, 0, help.stderr);
    for (const name of ENV_VARS) assert.match(help.stdout, new RegExp(`\\(env: ${name}\\)`), name);

    // An invalid value stops the server before it starts, naming the variable the flag set.
    for (const [flag, name] of [
      ['--sweep-interval-ms', 'ROOST_SWEEP_INTERVAL_MS'],
      ['--max-view-tokens', 'ROOST_MAX_VIEW_TOKENS'],
      ['--max-ttl', 'ROOST_MAX_TTL_SECONDS'],
    ]) {
      const result = await run([
        'serve',
        flag,
        'nope',
        '--port',
        '0',
        '--smtp-port',
        '0',
        '--db',
        join(dir, 'flags.db'),
      ]);
      assert.equal(result.code, 2, `${flag}: ${result.stderr}`);
      assert.match(result.stderr, new RegExp(name));
    }
  });
});
