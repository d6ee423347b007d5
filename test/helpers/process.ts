// Runs Roost as a child process (`roost serve` from source through tsx, or the built
// dist/cli.js as `npm start` does), for tests that kill it (crash tests), stop it, or run
// several instances at once. Resolves once the start-up log
// line names the HTTP URL.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { POSTGRES_TEST_SECRET_KEY } from './postgres.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  /** SIGKILL: no chance to flush or close anything. */
  kill(): Promise<void>;
  /** SIGTERM, and resolves with the exit code. */
  stop(): Promise<number | null>;
}

export async function spawnServer(
  env: Record<string, string>,
  timeoutMs = 60_000,
  options: {
    built?: boolean;
    /** Node's flags, given before the script: NODE_OPTIONS refuses some of V8's. */
    nodeArgs?: string[];
  } = {},
): Promise<ServerProcess> {
  const args = [
    ...(options.nodeArgs ?? []),
    ...(options.built ? ['dist/cli.js', 'serve'] : ['--import', 'tsx', 'src/cli.ts', 'serve']),
  ];
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      PORT: '0',
      ROOST_SMTP_PORT: '0',
      LOG_LEVEL: 'info',
      // Otherwise an instance on PostgreSQL writes the key it generates under the
      // repository's ./data, the default ROOST_DB's directory.
      ...(env.DATABASE_URL ? { ROOST_SECRET_KEY: POSTGRES_TEST_SECRET_KEY } : {}),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      // A server that never said it listens must not outlive the test that started it.
      child.kill('SIGKILL');
      reject(new Error(`server did not start in ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      for (const line of output.split('\n')) {
        if (!line.includes('Roost listening')) continue;
        try {
          const parsed = JSON.parse(line);
          if (parsed.http) {
            clearTimeout(timer);
            resolve(parsed.http);
          }
        } catch {
          /* partial line */
        }
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening:\n${output}`));
    });
  });
  return {
    url,
    child,
    output: () => output,
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGKILL');
      await once(child, 'exit');
    },
    async stop() {
      if (child.exitCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      const [code] = (await once(child, 'exit')) as [number | null];
      return code;
    },
  };
}
