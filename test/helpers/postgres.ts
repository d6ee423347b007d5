// PostgreSQL for tests: each test server gets its own fresh database, dropped afterwards.
// (Placeholder until the PostgreSQL engine lands: every PostgreSQL test is skipped with
// this reason, outside CI and in it.)
export async function postgresSkipReason(): Promise<string | undefined> {
  return 'PostgreSQL engine not built yet';
}

export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  throw new Error('PostgreSQL engine not built yet');
}
