// Imported first by the `roost` command and the package entry, so that it runs before any
// other module loads: on Node.js older than 22 the SQLite addon (better-sqlite3 13) crashes
// the process with a bare "Segmentation fault" instead of saying what is wrong.
const MINIMUM_MAJOR = 22;
const major = Number(process.versions.node.split('.')[0]);

if (major < MINIMUM_MAJOR) {
  process.stderr.write(
    `Roost needs Node.js ${MINIMUM_MAJOR} or later (this is ${major}.x). ` +
      'Install a current LTS release from https://nodejs.org/ (or `nvm install 24`, or your ' +
      'distribution’s nodejs 22+ package), then run the command again with it.\n',
  );
  process.exit(1);
}

export {};
