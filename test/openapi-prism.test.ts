// The README's walk-through, and its error cases, through Stoplight Prism's validating proxy
// (`prism proxy openapi.json UPSTREAM --errors`), a judge no one here wrote: every request
// and every answer — status, content type, headers, body — must match the served document.
// Requests the document itself forbids (a name too long, a body that is not JSON) go
// through a second proxy without --errors, which forwards them and lists what it found: only
// the request may be at fault, never Roost's answer.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import nodemailer from 'nodemailer';
import { startTestServer, type TestServer } from './helpers/server.js';

// Offline: every DNS question is answered "no such name", so mail authentication says none.
const offline = async () => {
  throw Object.assign(new Error('offline'), { code: 'ENOTFOUND' });
};

interface Violation {
  location: string[];
  message: string;
}
interface Answer {
  status: number;
  headers: Headers;
  body: any;
  /** What Prism found wrong, in the request or in the answer. */
  violations: Violation[];
}

/** A free TCP port on loopback (Prism takes a port number, not 0). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as { port: number };
  await new Promise((done) => server.close(done));
  return port;
}

interface Prism {
  url: string;
  close(): Promise<void>;
}

/** Starts `prism proxy` on the document, in front of `upstream`; resolves once it listens. */
async function startPrism(document: string, upstream: string, errors: boolean): Promise<Prism> {
  const port = await freePort();
  const args = ['proxy', document, upstream, '-h', '127.0.0.1', '-p', String(port), ...(errors ? ['--errors'] : [])];
  const child: ChildProcess = spawn(resolve('node_modules/.bin/prism'), args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, SCARF_ANALYTICS: 'false' },
  });
  let output = '';
  await new Promise<void>((ready, fail) => {
    const listen = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Prism is listening')) ready();
    };
    child.stdout!.on('data', listen);
    child.stderr!.on('data', listen);
    child.once('exit', (code) => fail(new Error(`prism exited (${code}): ${output}`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((done) => child.once('exit', done));
      child.kill();
      await exited;
    },
  };
}

describe('the walk-through through Prism’s validating proxy', () => {
  let server: TestServer;
  let dir: string;
  let strict: Prism;
  let lenient: Prism;

  before(async () => {
    // A mail domain with a dot: `slug@localhost`, the development default, is not an email
    // address by the format validators clients use. A small create rate, to meet the 429.
    server = await startTestServer('sqlite', {
      env: { ROOST_MAIL_DOMAIN: 'mail.roost.test', ROOST_CREATE_RATE: '12/hour' },
      smtp: { port: 0, dnsResolver: offline },
    });
    dir = mkdtempSync(join(tmpdir(), 'roost-prism-'));
    const document = await (await fetch(`${server.url}/api/v1/openapi.json`)).text();
    writeFileSync(join(dir, 'openapi.json'), document);
    [strict, lenient] = await Promise.all([
      startPrism(join(dir, 'openapi.json'), server.url, true),
      startPrism(join(dir, 'openapi.json'), server.url, false),
    ]);
  });
  after(async () => {
    await Promise.all([strict?.close(), lenient?.close()]);
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** One request through a proxy; `path` may be a URL Roost returned (its base URL is replaced). */
  async function via(
    prism: Prism,
    method: string,
    path: string,
    options: { token?: string; json?: unknown; raw?: string; headers?: Record<string, string> } = {},
  ): Promise<Answer> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    let body: string | undefined = options.raw;
    if (options.json !== undefined) {
      body = JSON.stringify(options.json);
      headers['content-type'] ??= 'application/json';
    }
    const base = server.config.baseUrl;
    const url = prism.url + (path.startsWith(base) ? path.slice(base.length) : path);
    const response = await fetch(url, { method, headers, body });
    const text = await response.text();
    let parsed: any;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = text;
    }
    const listed = response.headers.get('sl-violations');
    const violations: Violation[] = listed ? (JSON.parse(listed) as Violation[]) : [];
    // With --errors Prism answers a violation itself, in its own problem shape.
    if (typeof parsed?.type === 'string' && parsed.type.startsWith('https://stoplight.io/prism/errors'))
      violations.push(
        ...((parsed.validation as Violation[] | undefined) ?? [{ location: [], message: parsed.detail }]),
      );
    return { status: response.status, headers: response.headers, body: parsed, violations };
  }

  /** Through the strict proxy: the answer Roost gave, with no violation anywhere. */
  async function valid(status: number, method: string, path: string, options?: Parameters<typeof via>[3]) {
    const answer = await via(strict, method, path, options);
    assert.deepEqual(answer.violations, [], `${method} ${path}`);
    assert.equal(answer.status, status, `${method} ${path}: ${JSON.stringify(answer.body)}`);
    return answer;
  }

  it('create (no body, then a body), get, deliver with a key, repeat, read, long-poll, ack, delete: no violation', async () => {
    const bare = await valid(201, 'POST', '/api/v1/addresses');
    assert.equal(bare.body.address.name, 'Untitled');
    assert.ok(bare.headers.get('location') && bare.headers.get('ratelimit-remaining'));

    const created = await valid(201, 'POST', '/api/v1/addresses', {
      json: { name: 'refund for order 42', task_id: 'job-7', expires_in_seconds: 86400 },
    });
    const { address, credentials, endpoints } = created.body;
    const token: string = credentials.read_token;
    const events: string = endpoints.events_url;
    const inbox: string = endpoints.inbox_url;

    assert.equal((await valid(200, 'GET', `/api/v1/addresses/${address.id}`, { token })).body.address.taskId, 'job-7');

    const refund = { type: 'refund.succeeded', data: { order: 42, amount: 1999 } };
    const first = await valid(202, 'POST', inbox, { json: refund, headers: { 'idempotency-key': 'refund 42' } });
    const repeat = await valid(200, 'POST', inbox, { json: refund, headers: { 'idempotency-key': 'refund 42' } });
    assert.equal(repeat.body.duplicate, true);
    assert.equal(repeat.body.event.id, first.body.event.id);
    await valid(202, 'POST', inbox, { json: { dedupe_key: 'invoice #7 / März', data: null } });
    // Any body with ?raw=1, and a body with no JSON in it.
    await valid(202, 'POST', `${inbox}?raw=1`, {
      raw: 'order=42&status=paid',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });

    const page = await valid(200, 'GET', `${events}?after=0&limit=50&wait=0`, { token });
    assert.deepEqual(
      page.body.events.map((e: { sequence: number }) => e.sequence),
      [1, 2, 3],
    );
    assert.equal(page.body.next_cursor, 3);

    // Long-poll: held until the next delivery commits (the poll is sent first; if the
    // delivery wins the race, the poll finds the event at once — the same answer).
    const held = valid(200, 'GET', `${events}?after=3&wait=25`, { token });
    await valid(202, 'POST', inbox, { json: { type: 'build.done' } });
    const woken = await held;
    assert.equal(woken.body.events[0].type, 'build.done');

    const unacked = await valid(200, 'GET', `${events}?unacked=1`, { token });
    assert.equal(unacked.body.events.length, 4);
    const acked = await valid(200, 'POST', `${events}/${first.body.event.id}/ack`, { token });
    assert.ok(acked.body.event.acknowledged_at);
    await valid(200, 'POST', `${events}/${first.body.event.id}/ack`, { token });
    assert.equal((await valid(200, 'GET', `${events}?unacked=true&limit=1`, { token })).body.has_more, true);

    // Streams and email parts are not in the walk-through; credentials are.
    await valid(201, 'POST', `/api/v1/addresses/${address.id}/view-tokens`, { token });
    await valid(200, 'GET', `/api/v1/addresses/${address.id}/view-tokens`, { token });
    await valid(200, 'POST', `/api/v1/addresses/${address.id}/inbox-secret`, { token });

    await valid(204, 'DELETE', `/api/v1/addresses/${address.id}`, { token });
    await valid(404, 'GET', `/api/v1/addresses/${address.id}`, { token });
  });

  it('the inbox takes any body with ?raw=1 and with a sender, and answers handshakes, as declared: no violation', async () => {
    const created = await valid(201, 'POST', '/api/v1/addresses');
    const { address, credentials, endpoints } = created.body;
    const token: string = credentials.read_token;
    const inbox: string = endpoints.inbox_url;
    // A sender's own JSON, which is no CreateEvent, and bytes that are no JSON.
    const push = { ref: 'refs/heads/main', commits: [{ id: 'c0ffee' }] };
    await valid(202, 'POST', `${inbox}?raw=1`, { json: push, headers: { 'idempotency-key': 'push 1' } });
    await valid(200, 'POST', `${inbox}?raw=1`, { json: push, headers: { 'idempotency-key': 'push 1' } });
    await valid(202, 'POST', `${inbox}?raw=1&type=ping`, {
      raw: '\u0000\u00ff',
      headers: { 'content-type': 'application/octet-stream' },
    });

    const secret = 'whsec-for-the-proxy-test';
    const sender = { provider: 'hmac_sha256', secrets: [secret], header: 'x-signature' };
    await valid(200, 'PUT', `/api/v1/addresses/${address.id}/sender`, { token, json: sender });
    await valid(200, 'GET', `/api/v1/addresses/${address.id}/sender`, { token });
    const body = JSON.stringify({ order: 42, status: 'paid' });
    const signature = createHmac('sha256', secret).update(body).digest('hex');
    const signed = await valid(202, 'POST', inbox, {
      raw: body,
      headers: { 'content-type': 'application/json', 'x-signature': signature },
    });
    assert.equal(signed.body.event.data.verification.verified, true);
    const forged = await valid(401, 'POST', inbox, {
      raw: body,
      headers: { 'content-type': 'application/json', 'x-signature': 'ab'.repeat(32) },
    });
    assert.equal(forged.body.error.code, 'signature_invalid');
    // A GET on an inbox whose sender does no GET handshake: 405 with Allow.
    assert.equal((await valid(405, 'GET', inbox)).headers.get('allow'), 'POST');

    // Slack's URL verification: answered 200 in text, the challenge echoed, nothing stored.
    const slackSecret = 'slack-signing-secret-for-the-proxy-test';
    await valid(200, 'PUT', `/api/v1/addresses/${address.id}/sender`, {
      token,
      json: { provider: 'slack', secrets: [slackSecret] },
    });
    const challenge = JSON.stringify({ type: 'url_verification', challenge: 'c-42' });
    const timestamp = String(Math.floor(Date.now() / 1000));
    const slackSignature = `v0=${createHmac('sha256', slackSecret).update(`v0:${timestamp}:${challenge}`).digest('hex')}`;
    const handshake = await valid(200, 'POST', inbox, {
      raw: challenge,
      headers: {
        'content-type': 'application/json',
        'x-slack-signature': slackSignature,
        'x-slack-request-timestamp': timestamp,
      },
    });
    assert.equal(handshake.body, 'c-42');
    assert.match(handshake.headers.get('content-type') ?? '', /^text\/plain/);
    await valid(204, 'DELETE', `/api/v1/addresses/${address.id}/sender`, { token });
  });

  it('an email event, its raw message and its attachment are answered as declared: no violation', async () => {
    const created = await valid(201, 'POST', '/api/v1/addresses');
    const { address, credentials, endpoints } = created.body;
    const token: string = credentials.read_token;
    const mail = nodemailer.createTransport({ host: '127.0.0.1', port: server.roost.smtpPort!, ignoreTLS: true });
    await mail.sendMail({
      from: 'billing@example.org',
      to: address.email,
      subject: 'Invoice 7',
      text: 'Attached.',
      attachments: [{ filename: 'invoice.csv', content: 'item,amount\nbook,12\n', contentType: 'text/csv' }],
    });
    const page = await valid(200, 'GET', `${endpoints.events_url}?after=0`, { token });
    const email = page.body.events[0];
    assert.equal(email.type, 'email.received');
    const raw = await valid(200, 'GET', `${endpoints.events_url}/${email.id}/raw`, { token });
    assert.match(raw.headers.get('content-type') ?? '', /^message\/rfc822/);
    assert.match(String(raw.body), /Subject: Invoice 7/);
    const part = await valid(200, 'GET', `${endpoints.events_url}/${email.id}/attachments/0`, { token });
    assert.match(part.headers.get('content-type') ?? '', /^text\/csv/);
    await valid(404, 'GET', `${endpoints.events_url}/${email.id}/attachments/1`, { token });
  });

  it('the error cases a conforming client meets are answered as documented: no violation', async () => {
    const created = await valid(201, 'POST', '/api/v1/addresses');
    const { address, credentials, endpoints } = created.body;
    const token: string = credentials.read_token;
    const unknownAddress = 'addr_AAAAAAAAAAAAAAAAAAAAAA';

    const refused = await valid(401, 'GET', `/api/v1/addresses/${address.id}`, { token: 'roost_read_wrong' });
    assert.equal(refused.body.error.code, 'unauthorized');
    assert.ok(refused.headers.get('www-authenticate'));
    await valid(404, 'GET', `/api/v1/addresses/${unknownAddress}`, { token });
    await valid(404, 'GET', `/api/v1/addresses/${unknownAddress}/events`, { token });
    await valid(404, 'POST', `${endpoints.events_url}/evt_AAAAAAAAAAAAAAAAAAAAAA/ack`, { token });
    await valid(404, 'POST', `/api/v1/inbox/${address.id}/roost_ingress_wrong`, { json: {} });
    const mismatch = await valid(400, 'POST', endpoints.inbox_url, {
      json: { dedupe_key: 'one' },
      headers: { 'idempotency-key': 'two' },
    });
    assert.equal(mismatch.body.error.code, 'idempotency_key_mismatch');
    // The document lets any JSON through (raw capture takes it); without ?raw=1 it must be a CreateEvent.
    const unknownField = await valid(400, 'POST', endpoints.inbox_url, { json: { type: 'x', order_id: 7 } });
    assert.match(unknownField.body.error.message, /order_id/);
    await valid(400, 'POST', endpoints.inbox_url, { json: { dedupe_key: 'x'.repeat(1025) } });
    // The inbox takes any media type (raw capture); without ?raw=1 text is refused.
    await valid(415, 'POST', endpoints.inbox_url, { raw: 'hello', headers: { 'content-type': 'text/plain' } });
    await valid(413, 'POST', endpoints.inbox_url, { json: { data: 'x'.repeat(300 * 1024) } });
    await valid(405, 'GET', endpoints.inbox_url);
  });

  it('requests the document forbids are refused as it declares: every violation is the request’s', async () => {
    const inbox: string = (await valid(201, 'POST', '/api/v1/addresses')).body.endpoints.inbox_url;
    const cases: Array<[number, string, string, Parameters<typeof via>[3]]> = [
      [400, 'POST', '/api/v1/addresses', { json: { name: 'x'.repeat(101) } }],
      [400, 'POST', '/api/v1/addresses', { json: { nickname: 'x' } }],
      [415, 'POST', '/api/v1/addresses', { raw: 'name=x', headers: { 'content-type': 'text/plain' } }],
      [
        400,
        'GET',
        `${inbox.replace(/\/inbox\/([^/]+)\/.*$/, '/addresses/$1')}/events?after=-1`,
        { token: 'roost_read_x' },
      ],
    ];
    for (const [status, method, path, options] of cases) {
      const answer = await via(lenient, method, path, options);
      assert.equal(answer.status, status, `${method} ${path} ${JSON.stringify(options).slice(0, 60)}`);
      assert.ok(answer.violations.length > 0, 'Prism saw the request break the document');
      const ofTheAnswer = answer.violations.filter((v) => v.location[0] === 'response');
      assert.deepEqual(ofTheAnswer, [], `${method} ${path}`);
    }
  });

  it('a spent create rate: 429 with Retry-After and the RateLimit headers, as declared', async () => {
    let limited: Answer | undefined;
    for (let i = 0; i < 20 && !limited; i++) {
      const answer = await via(strict, 'POST', '/api/v1/addresses');
      assert.deepEqual(answer.violations, []);
      if (answer.status === 429) limited = answer;
      else assert.equal(answer.status, 201);
    }
    assert.ok(limited, 'the create rate ran out');
    assert.equal(limited.body.error.code, 'rate_limited');
    assert.match(limited.headers.get('retry-after') ?? '', /^\d+$/);
    assert.equal(limited.headers.get('ratelimit-remaining'), '0');
  });
});
