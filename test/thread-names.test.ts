// Roost's own threads carry names an operator can see (`top -H`, /proc/PID/task/*/comm)
// and the bench reads (bench/processes.ts): the SQLite writer and the email workers.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { EmailProcessor } from '../src/smtp/processor.js';
import { SqliteStorage } from '../src/storage/sqlite/engine.js';

const threadNames = () =>
  readdirSync('/proc/self/task').map((task) => readFileSync(`/proc/self/task/${task}/comm`, 'utf8').trim());

const nodeNamesThreads = Number(process.versions.node.split('.')[0]) >= 24;

test(
  'the SQLite writer and the email workers are named threads (Node 24 names them; Node 22 does not)',
  { skip: nodeNamesThreads ? false : 'Node 22 does not give worker threads their names' },
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'roost-threads-'));
    const storage = new SqliteStorage(join(dir, 'roost.db'));
    const processor = new EmailProcessor({
      workers: 1,
      messagesPerWorker: 1,
      bytesPerWorker: 1024 * 1024,
      deadlineMs: 60_000,
      limits: { maxTextBytes: 1024, maxHtmlBytes: 1024 },
      resolver: async () => {
        throw Object.assign(new Error('no such name'), { code: 'ENOTFOUND' });
      },
      logger: { warn: () => {} },
    });
    try {
      await storage.ping();
      const raw = Buffer.from('From: a@example.org\r\nSubject: s\r\n\r\nhello\r\n');
      await processor.process({ raw, ip: '127.0.0.1', helo: 'client.test', sender: '', mta: 'roost.test' });
      const names = threadNames();
      assert.ok(names.includes('roost-writer'), names.join(', '));
      assert.ok(names.includes('roost-email'), names.join(', '));
    } finally {
      await processor.close();
      await storage.close();
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
