// What one group commit writes to the WAL, page by page: appends go through the writer's own
// code (SqliteWrites) in batches, rotating over many addresses as the ingest bench does, and
// the WAL's frame headers are then read back and each page named after the B-tree that owns
// it (SQLite's dbstat table). The WAL bytes per event are what the writer pays for in
// write(2), checksums and the fsync's writeback (BENCHMARKS.md, "What bounds each figure").
// It also times each measured commit, fsync included, with nothing else running: set beside
// the bench's commits under load, the difference is what sharing the cores costs a commit.
//   node --import tsx bench/wal-frames.ts [--addresses 1000] [--batch 24] [--warm-commits 3000]
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { newAddressId } from '../src/core/secrets.js';
import { newEventId } from '../src/storage/event-ids.js';
import { migrate, openSqlite } from '../src/storage/sqlite/connection.js';
import { SqliteWrites, toAppendTuple, type AppendTuple } from '../src/storage/sqlite/writes.js';
import type { AppendInput } from '../src/storage/storage.js';
import { shuffled, SMALL_EVENT } from './fixtures.js';
import { percentile } from './load.js';

const { values } = parseArgs({
  options: {
    addresses: { type: 'string', default: '1000' },
    batch: { type: 'string', default: '24' },
    'warm-commits': { type: 'string', default: '3000' },
  },
});
const ADDRESSES = Number(values.addresses);
const BATCH = Number(values.batch);
const MEASURED_COMMITS = 500;
/** A WAL frame: a 24-byte header (page number, then the database size on commit frames), then the page. */
const FRAME_HEADER = 24;
const WAL_HEADER = 32;

const dir = mkdtempSync(join(tmpdir(), 'roost-wal-frames-'));
const path = join(dir, 'roost.db');
const db = openSqlite(path, 'FULL');
try {
  migrate(db);
  db.pragma('wal_autocheckpoint = 0'); // the measured frames must all still be in the WAL
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  const writes = new SqliteWrites(db);
  const ids = shuffled(
    Array.from({ length: ADDRESSES }, (_, i) => {
      const id = newAddressId();
      writes.insertAddress({
        id,
        slug: `wal-${i}`,
        name: 'wal frames',
        taskId: null,
        email: `wal-${i}@localhost`,
        createdAt: Date.now(),
        expiresAt: null,
        readTokenDigest: 'r'.repeat(64),
        ingressSecretDigest: 'i'.repeat(64),
        previousIngressDigest: null,
        previousIngressUntil: null,
        hasSender: false,
      });
      return id;
    }),
  );
  const data = JSON.stringify(JSON.parse(SMALL_EVENT).data);
  let next = 0;
  /** Milliseconds each commit took, appends and fsync together. */
  const took: number[] = [];
  const commit = (count: number) => {
    took.length = 0;
    for (let c = 0; c < count; c++) {
      const batch: AppendTuple[] = Array.from({ length: BATCH }, () => {
        const now = Date.now();
        const input: AppendInput = {
          addressId: ids[next++ % ADDRESSES],
          type: 'bench.ping',
          source: 'https',
          dataJson: data,
          metadataJson: null,
          dedupeKey: null,
          keyScope: 'http',
          createdAt: now,
        };
        return toAppendTuple(input, newEventId(now), 1000);
      });
      const startedAt = performance.now();
      const outcomes = writes.appendBatch(batch);
      took.push(performance.now() - startedAt);
      for (const outcome of outcomes)
        if (outcome.status !== 'created') throw new Error(`an append was not stored: ${JSON.stringify(outcome)}`);
    }
  };
  // Queues of some length first, as after a while of ingest; then a WAL holding only the measured commits.
  commit(Number(values['warm-commits']));
  db.pragma('wal_checkpoint(TRUNCATE)');
  commit(MEASURED_COMMITS);

  const wal = readFileSync(`${path}-wal`);
  const owner = new Map<number, string>();
  for (const row of db
    .prepare<[], { name: string; pageno: number; pagetype: string }>('SELECT name, pageno, pagetype FROM dbstat')
    .all()) {
    owner.set(row.pageno, `${row.name} (${row.pagetype})`);
  }
  const byOwner = new Map<string, number>();
  let frames = 0;
  for (let at = WAL_HEADER; at + FRAME_HEADER + pageSize <= wal.length; at += FRAME_HEADER + pageSize) {
    const page = wal.readUInt32BE(at);
    const name = page === 1 ? 'page 1 (database header)' : (owner.get(page) ?? 'other (freelist)');
    byOwner.set(name, (byOwner.get(name) ?? 0) + 1);
    frames++;
  }
  const perCommit = frames / MEASURED_COMMITS;
  console.log(
    `${ADDRESSES} addresses, ${BATCH} appends a commit, ${pageSize}-byte pages, ~${Math.round(statSync(path).size / 2 ** 20)} MiB file`,
  );
  console.log(
    `WAL frames per commit: ${perCommit.toFixed(1)} = ${((perCommit * (pageSize + FRAME_HEADER)) / BATCH / 1024).toFixed(1)} KiB written and synced per event`,
  );
  for (const [name, count] of [...byOwner].sort((a, b) => b[1] - a[1]))
    console.log(`  ${(count / MEASURED_COMMITS).toFixed(1).padStart(5)}  ${name}`);
  const timing = (label: string) =>
    console.log(
      `each commit alone, ${label}: p50 ${percentile(took, 50).toFixed(2)} ms, p99 ${percentile(took, 99).toFixed(2)} ms`,
    );
  timing('the WAL growing (as before the first checkpoint)');
  // The server's WAL after its first checkpoint is written over from its start: no new
  // blocks, so each fsync has no file-system metadata to write.
  db.pragma('wal_checkpoint(RESTART)');
  commit(MEASURED_COMMITS);
  timing('the WAL written over (as after a checkpoint)');
} finally {
  db.close();
  rmSync(dir, { recursive: true, force: true });
}
