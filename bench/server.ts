// Roost as the benchmarks run it: exactly `roost serve` (configuration from the
// environment, production defaults including LOG_LEVEL=info), except that the SQLite
// storage can be opened with the options the bench compares against — one commit per
// append (--group-commit off), --synchronous NORMAL, and no events kept from earlier
// reads (--recent-event-bytes 0). These are bench-only switches,
// deliberately not part of the service's configuration.
import { writeFileSync } from 'node:fs';
import { getHeapSpaceStatistics, writeHeapSnapshot } from 'node:v8';
import { Session } from 'node:inspector/promises';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.js';
import { startRoost } from '../src/server.js';
import { SqliteStorage } from '../src/storage/sqlite/engine.js';
import { serveIpc } from './processes.js';

const { values } = parseArgs({
  options: {
    synchronous: { type: 'string', default: 'FULL' },
    'group-commit': { type: 'string', default: 'on' },
    'recent-event-bytes': { type: 'string' },
    smtp: { type: 'boolean', default: false },
  },
});
const synchronous = values.synchronous === 'NORMAL' ? 'NORMAL' : 'FULL';
const config = loadConfig(process.env);
const storage = config.databaseUrl
  ? undefined
  : new SqliteStorage(config.dbPath, {
      synchronous,
      groupCommit: values['group-commit'] !== 'off',
      recentEventBytes: values['recent-event-bytes'] === undefined ? undefined : Number(values['recent-event-bytes']),
    });
// SMTP on a free port, with DNS answering "no such name" at once: the sender checks
// (SPF, DKIM, DMARC) still run, but the figure does not depend on this machine's network.
const offline = async () => {
  throw Object.assign(new Error('offline'), { code: 'ENOTFOUND' });
};
const roost = await startRoost(config, { storage, smtp: values.smtp ? { port: 0, dnsResolver: offline } : undefined });

// CPU profiles of exactly the measured phase (the bench's --profile), through the inspector.
let profiler: Session | undefined;

serveIpc(async (message) => {
  switch (message.type) {
    case 'profile-start':
      profiler = new Session();
      profiler.connect();
      await profiler.post('Profiler.enable');
      await profiler.post('Profiler.start');
      return true;
    case 'profile-stop': {
      const { profile } = await profiler!.post('Profiler.stop');
      writeFileSync(String(message.file), JSON.stringify(profile));
      profiler!.disconnect();
      profiler = undefined;
      return true;
    }
    case 'memory': {
      // Where the RSS is: V8's heap (committed and live, by space), and memory outside it.
      const usage = process.memoryUsage();
      const spaces = Object.fromEntries(
        getHeapSpaceStatistics().map((s) => [s.space_name, { size: s.space_size, used: s.space_used_size }]),
      );
      return { ...usage, spaces };
    }
    case 'heap-snapshot':
      // Blocks the process while it writes (seconds for a large heap).
      return writeHeapSnapshot(String(message.file));
    case 'stats':
      return {
        held: roost.waiters.held,
        commits: storage ? { ...storage.commitStats } : null,
        rssMiB: process.memoryUsage.rss() / 2 ** 20,
      };
    case 'stop':
      await roost.close();
      process.exit(0);
  }
  return null;
});
process.send!({ type: 'ready', url: roost.url, smtpPort: roost.smtpPort });
