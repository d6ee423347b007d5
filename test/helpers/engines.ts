// Runs one behavioural suite against every storage engine, each with its own fresh server
// and database. An engine that cannot run here is skipped with its reason in the title
// line (never silently); in CI PostgreSQL is never skipped (see ./postgres.ts).
import { after, before, describe } from 'node:test';
import {
  ENGINES,
  engineSkipReason,
  startTestServer,
  type Engine,
  type TestServer,
  type TestServerOptions,
} from './server.js';

export async function forEachEngine(
  title: string,
  body: (server: () => TestServer, engine: Engine) => void,
  options: TestServerOptions = {},
): Promise<void> {
  for (const engine of ENGINES) {
    const skip = await engineSkipReason(engine);
    describe(`${title} [${engine}]`, { skip: skip ? `skipped: ${skip}` : false }, () => {
      let server: TestServer | undefined;
      before(async () => {
        server = await startTestServer(engine, options);
      });
      after(async () => {
        await server?.close();
      });
      body(() => server!, engine);
    });
  }
}

/** Polls `check` until it returns true (for effects that complete after a response). */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 5000,
): Promise<void> {
  const start = Date.now();
  while (!(await check())) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
