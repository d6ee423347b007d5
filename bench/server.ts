// Roost as the benchmarks run it: exactly `roost serve` (configuration from the
// environment, production defaults including LOG_LEVEL=info), except that the SQLite
// storage can be opened with the options the bench compares against — one commit per
// append (--group-commit off) and --synchronous NORMAL. These are bench-only switches,
// deliberately not part of the service's configuration.
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.js';
import { startRoost } from '../src/server.js';
import { SqliteStorage } from '../src/storage/sqlite.js';
import { serveIpc } from './processes.js';

const { values } = parseArgs({
  options: {
    synchronous: { type: 'string', default: 'FULL' },
    'group-commit': { type: 'string', default: 'on' },
  },
});
const synchronous = values.synchronous === 'NORMAL' ? 'NORMAL' : 'FULL';
const config = loadConfig(process.env);
const storage = config.databaseUrl
  ? undefined
  : new SqliteStorage(config.dbPath, { synchronous, groupCommit: values['group-commit'] !== 'off' });
const roost = await startRoost(config, { storage });

serveIpc(async (message) => {
  switch (message.type) {
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
