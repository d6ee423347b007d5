// The layers of src/ (README.md § Layout): transports (http, mcp, smtp) → core → storage,
// and nothing imports back up. The wire contract (src/contract/) sits beside them: the core,
// the transports, the client and the inspector read it, and it reads only the fixed limits.
// `npm run lint` runs this check (scripts/check-layers.js).
const TRANSPORTS = '^src/(http|mcp|smtp)/';
const ENTRY_POINTS = '^src/((cli|server|index)[.]ts$|cli/)';
const CORE = '^src/(core/|config[.]ts$)';

module.exports = {
  forbidden: [
    {
      name: 'storage-is-a-leaf',
      comment: 'Storage imports nothing of the project outside src/storage/.',
      severity: 'error',
      from: { path: '^src/storage/' },
      to: { path: '^src/', pathNot: '^src/storage/' },
    },
    {
      name: 'contract-is-a-leaf',
      comment: 'The wire contract imports nothing of the project but itself and the fixed limits it publishes.',
      severity: 'error',
      from: { path: '^src/contract/' },
      to: { path: '^src/', pathNot: ['^src/contract/', '^src/core/limits[.]ts$'] },
    },
    {
      name: 'core-below-transports',
      comment: 'Core (with the configuration) does not import transports or entry points.',
      severity: 'error',
      from: { path: CORE },
      to: { path: [TRANSPORTS, ENTRY_POINTS, '^src/(client|web)/', '^src/(logger|redact)[.]ts$'] },
    },
    {
      name: 'logging-below-transports',
      comment: 'The logger and its redaction serve every transport and import none.',
      severity: 'error',
      from: { path: '^src/(logger|redact)[.]ts$' },
      to: { path: [TRANSPORTS, ENTRY_POINTS, '^src/(client|web)/'] },
    },
    {
      name: 'transports-above-core',
      comment:
        'Transports reach storage only through the core (src/core/records.ts re-exports its shapes), types included.',
      severity: 'error',
      from: { path: TRANSPORTS },
      to: { path: '^src/storage/' },
    },
    {
      name: 'mcp-under-http',
      comment: "MCP's tools know nothing of HTTP; the HTTP endpoint is a route over them (src/http/routes/mcp.ts).",
      severity: 'error',
      from: { path: '^src/mcp/' },
      to: { path: ['^src/(http|smtp)/', ENTRY_POINTS] },
    },
    {
      name: 'transports-below-entry-points',
      comment: 'Only the entry points (cli.ts and cli/, server.ts, index.ts) put the transports together.',
      severity: 'error',
      from: { path: TRANSPORTS },
      to: { path: ENTRY_POINTS },
    },
    {
      name: 'smtp-apart-from-http',
      severity: 'error',
      from: { path: '^src/smtp/' },
      to: { path: '^src/(http|mcp)/' },
    },
    {
      name: 'http-apart-from-smtp',
      severity: 'error',
      from: { path: '^src/http/' },
      to: { path: '^src/smtp/' },
    },
    {
      name: 'client-is-standalone',
      comment: 'The client library runs without the server: only the wire contract is shared.',
      severity: 'error',
      from: { path: '^src/client/' },
      to: { path: '^src/', pathNot: ['^src/client/', '^src/contract/', '^src/config[.]ts$', '^src/core/limits[.]ts$'] },
    },
    {
      name: 'inspector-is-standalone',
      comment: 'The browser inspector shares only the wire contract with the server.',
      severity: 'error',
      from: { path: '^src/web/' },
      to: { path: '^src/', pathNot: ['^src/web/', '^src/contract/'] },
    },
    {
      name: 'no-circular',
      comment: 'A cycle means two modules are one; merge them or move what they share down.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
