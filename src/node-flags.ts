// The Node.js flags `npm start` gives the service (package.json's start script puts them
// first in NODE_OPTIONS, so an operator's own NODE_OPTIONS still win), and with which the
// bench runs it. A smaller young generation: on Node 24, V8 lets it grow large while many
// held polls arrive at once, and that was most of what a held poll cost
// (docs/scale-out.md § Operating notes, BENCHMARKS.md "Held polls").
export const SERVE_NODE_FLAGS = ['--max-semi-space-size=16'] as const;
