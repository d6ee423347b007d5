// The layers of src/ (README.md § Layout): transports (http, mcp, smtp) → core → storage,
// and nothing imports back up. `npm run lint` runs this check (scripts/check-layers.js).
const TRANSPORTS = '^src/(http|mcp|smtp)/';
const ENTRY_POINTS = '^src/(cli|server|index)[.]ts$';
const CORE = '^src/(core/|config[.]ts$|(|credential-|sender-)schemas[.]ts$)';

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
      name: 'core-below-transports',
      comment: 'Core (with the configuration and the wire schemas) does not import transports or entry points.',
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
      name: 'mcp-under-http',
      comment: "MCP's tools know nothing of HTTP; the HTTP endpoint is a route over them (src/http/routes/mcp.ts).",
      severity: 'error',
      from: { path: '^src/mcp/' },
      to: { path: ['^src/(http|smtp)/', ENTRY_POINTS] },
    },
    {
      name: 'transports-below-entry-points',
      comment: 'Only the entry points (cli.ts, server.ts, index.ts) put the transports together.',
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
      comment: 'The client library runs without the server: only the wire schemas are shared.',
      severity: 'error',
      from: { path: '^src/client/' },
      to: {
        path: '^src/',
        pathNot: [
          '^src/client/',
          '^src/(schemas|credential-schemas|sender-schemas|config)[.]ts$',
          '^src/core/limits[.]ts$',
        ],
      },
    },
    {
      name: 'inspector-is-standalone',
      comment: 'The browser inspector shares only types with the server.',
      severity: 'error',
      from: { path: '^src/web/' },
      to: { path: '^src/', pathNot: ['^src/web/', '^src/(schemas|credential-schemas|sender-schemas)[.]ts$'] },
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
