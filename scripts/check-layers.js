// The layer rules of .dependency-cruiser.cjs (README.md § Layout), checked through
// dependency-cruiser's API: `npm run lint` fails on an import that runs back up. The API,
// unlike the depcruise command, also runs on Node versions older than the project's.
import { createRequire } from 'node:module';
import { cruise, format } from 'dependency-cruiser';

const { options, forbidden } = createRequire(import.meta.url)('../.dependency-cruiser.cjs');
const result = await cruise(['src'], { ...options, validate: true, ruleSet: { forbidden } });
process.stdout.write((await format(result.output, { outputType: 'err' })).output);
process.exitCode = result.output.summary.error > 0 ? 1 : 0;
