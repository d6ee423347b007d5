// /llms.txt names only what exists: every endpoint it writes as "METHOD /api/v1/…", every
// URL path in its examples, and every field it writes in backticks (a dotted path such as
// `data.authentication.verdict` step by step) are found in /api/v1/openapi.json — so the
// guide cannot drift from the interface. Also: it stays short enough to read in one go.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from './helpers/http.js';
import { startTestServer, type TestServer } from './helpers/server.js';

type Node = { [key: string]: any };

/** An OpenAPI path template as a regex over concrete paths ({addressId} → one segment). */
const templateRegex = (template: string) =>
  new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`);

/** Every property of the document's schemas, with the properties it holds (through $ref and anyOf/oneOf/allOf). */
function propertyGraph(doc: Node): { names: Set<string>; children: Map<string, Set<string>> } {
  const names = new Set<string>();
  const children = new Map<string, Set<string>>();
  const resolve = (schema: Node | undefined, seen = new Set<Node>()): Node[] => {
    if (!schema || typeof schema !== 'object' || seen.has(schema)) return [];
    seen.add(schema);
    if (typeof schema.$ref === 'string') {
      const target = schema.$ref
        .replace(/^#\//, '')
        .split('/')
        .reduce((node: Node, key: string) => node?.[key], doc);
      return resolve(target, seen);
    }
    const alternatives = [...(schema.anyOf ?? []), ...(schema.oneOf ?? []), ...(schema.allOf ?? [])];
    return [
      schema,
      ...(schema.items ? resolve(schema.items, seen) : []),
      ...alternatives.flatMap((a) => resolve(a, seen)),
    ];
  };
  const walk = (node: unknown) => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (!node || typeof node !== 'object') return;
    const n = node as Node;
    if (n.properties && typeof n.properties === 'object') {
      for (const [name, schema] of Object.entries(n.properties as Node)) {
        names.add(name);
        const below = children.get(name) ?? new Set<string>();
        for (const s of resolve(schema)) for (const child of Object.keys(s.properties ?? {})) below.add(child);
        children.set(name, below);
      }
    }
    // Query and path parameters are fields too (after, limit, wait, unacked).
    if (typeof n.name === 'string' && (n.in === 'query' || n.in === 'path')) names.add(n.name);
    Object.values(n).forEach(walk);
  };
  walk(doc);
  return { names, children };
}

describe('/llms.txt against the OpenAPI document', () => {
  let server: TestServer;
  let text: string;
  let doc: Node;
  before(async () => {
    server = await startTestServer('sqlite');
    const res = await request(server.url, 'GET', '/llms.txt');
    assert.equal(res.status, 200);
    text = res.text;
    doc = (await request(server.url, 'GET', '/api/v1/openapi.json')).body;
  });
  after(() => server.close());

  it('every "METHOD /api/v1/…" it names is an operation of the document', () => {
    const named = [...text.matchAll(/\b(GET|POST|PUT|PATCH|DELETE) (\/api\/v1\/[^\s"{}]*)/g)];
    assert.ok(named.length >= 8, `endpoints named: ${named.length}`);
    for (const [, method, path] of named) {
      const concrete = path.replace(/\$[A-Z_]+/g, 'x');
      const found = Object.entries(doc.paths as Node).some(
        ([template, operations]) => templateRegex(template).test(concrete) && operations[method.toLowerCase()],
      );
      assert.ok(found, `${method} ${path} is not in the OpenAPI document`);
    }
  });

  it('every /api/v1 path of its examples exists', () => {
    const base = server.config.baseUrl;
    const paths = [
      ...text.matchAll(new RegExp(`${base.replace(/[.*+?^$()|[\]\\]/g, '\\$&')}(/api/v1/[^\\s"?']*)`, 'g')),
    ];
    assert.ok(paths.length >= 2);
    for (const [, path] of paths) {
      const concrete = path.replace(/\$[A-Z_]+/g, 'x');
      if (path === '/api/v1/openapi.json') continue; // the document itself, not an operation in it
      assert.ok(
        Object.keys(doc.paths as Node).some((template) => templateRegex(template).test(concrete)),
        `${path} is not in the OpenAPI document`,
      );
    }
  });

  it('every field it writes in backticks is a property or parameter of the document, dotted paths step by step', () => {
    const { names, children } = propertyGraph(doc);
    const fields = [...new Set([...text.matchAll(/`([^`]+)`/g)].map((m) => m[1]))];
    assert.ok(fields.length >= 20, `fields named: ${fields.length}`);
    for (const field of fields) {
      assert.match(field, /^[a-z_]+(\.[a-z_0-9]+)*$/, `\`${field}\` is not written as a field`);
      const [first, ...rest] = field.split('.');
      assert.ok(names.has(first), `${first} (of \`${field}\`) is not in the OpenAPI document`);
      let parent = first;
      for (const step of rest) {
        assert.ok(
          children.get(parent)?.has(step),
          `${parent}.${step} (of \`${field}\`) is not in the OpenAPI document`,
        );
        parent = step;
      }
    }
  });

  it('covers what agents had to find elsewhere, and stays short enough to read in one go', () => {
    for (const needle of [
      '-o roost.json',
      'data.body_base64',
      'unacked',
      'latest_sequence',
      'data.reply_text',
      'data.in_reply_to',
      'data.authentication.verdict',
      'sends none',
      'create_return_address',
      'poll_events',
      'ack_event',
      'callbacks',
      'human.message',
    ]) {
      assert.ok(text.includes(needle), `llms.txt should mention ${needle}`);
    }
    // Short enough to read in one go; the callbacks section took most of the room left for sections.
    assert.ok(Buffer.byteLength(text) < 7000, `${Buffer.byteLength(text)} bytes`);
  });
});
