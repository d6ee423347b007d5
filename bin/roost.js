#!/usr/bin/env node
// The `roost` command as npm installs it: the program is dist/cli.js, built from src/cli.ts.
// The line above lives here, not in src/cli.ts: typescript-eslint reads a file that starts
// with one apart from the rest of the program, and builds the whole program again for it.
import '../dist/cli.js';
