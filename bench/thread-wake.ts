// What a postMessage costs the thread that sends it, to a worker asleep in its event loop
// and to one that is busy: a crossing to a sleeping thread pays for waking it, which on a
// virtual machine can cost more than the message itself. Every crossing Roost makes (the
// SQLite writer, the email workers) pays one or the other (BENCHMARKS.md, "What bounds
// each figure").
//   node --import tsx bench/thread-wake.ts [--messages 3000] [--bytes 400]
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';

const { values } = parseArgs({
  options: {
    messages: { type: 'string', default: '3000' },
    bytes: { type: 'string', default: '400' },
  },
});
const MESSAGES = Number(values.messages);
const BYTES = Number(values.bytes);

// Answers each message; one with `spinMs` keeps the thread busy that long first.
const worker = new Worker(
  `const { parentPort } = require('node:worker_threads');
   parentPort.on('message', (message) => {
     if (message.spinMs) for (const end = performance.now() + message.spinMs; performance.now() < end; );
     parentPort.postMessage(0);
   });`,
  { eval: true },
);
const answered = () => new Promise<void>((resolve) => worker.once('message', () => resolve()));
/** A job shaped like an email worker's: a few strings and the message's own bytes. */
const job = (id: number) => ({ op: 'job', id, raw: new Uint8Array(BYTES), ip: '127.0.0.1', helo: 'client.test' });

/** The sending thread's time in postMessage, in µs. */
function timedPost(message: unknown): number {
  const start = performance.now();
  worker.postMessage(message);
  return (performance.now() - start) * 1000;
}

function summary(label: string, micros: number[]): void {
  micros.sort((a, b) => a - b);
  const mean = micros.reduce((sum, value) => sum + value, 0) / micros.length;
  const p50 = micros[Math.floor(micros.length / 2)];
  console.log(`${label.padEnd(44)} p50 ${p50.toFixed(1).padStart(5)} µs  mean ${mean.toFixed(1).padStart(5)} µs`);
}

try {
  const started = answered();
  worker.postMessage({ spinMs: 0 });
  await started;
  // Asleep: each message is posted after the answer to the one before, so the worker has
  // gone back to waiting in its event loop.
  const asleep: number[] = [];
  for (let i = 0; i < MESSAGES; i++) {
    const answer = answered();
    asleep.push(timedPost(job(i)));
    await answer;
  }
  // Busy: posted while the worker spins on the message before (that one woke it).
  const busy: number[] = [];
  for (let i = 0; i < Math.min(MESSAGES, 500); i++) {
    const spun = answered();
    worker.postMessage({ spinMs: 0.5 });
    busy.push(timedPost(job(i)));
    await spun;
    await answered();
  }
  console.log(`postMessage of a ${BYTES}-byte job, the sending thread's time:`);
  summary('to a worker asleep in its event loop', asleep);
  summary('to a worker busy with the message before', busy);
} finally {
  await worker.terminate();
}
