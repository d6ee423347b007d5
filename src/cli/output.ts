// What a command prints (docs/api.md §11.3): stdout carries JSON only (one object a line when
// piped); progress and summaries go to stderr, and only when stderr is a terminal.

const humanStderr = Boolean(process.stderr.isTTY);

/** Progress and summaries for a person; silent when stderr is piped. Never pass a read token. */
export function note(message: string): void {
  if (humanStderr) process.stderr.write(`${message}\n`);
}

/** A whole response: indented for a person at a terminal, one line for a program. */
export function printJson(value: unknown): void {
  process.stdout.write(
    `${escapeTerminalControls(JSON.stringify(value, null, process.stdout.isTTY ? 2 : undefined))}\n`,
  );
}

/**
 * One record of a stream: always one line, so that `| jq -c`, `| head -1` work. JSON
 * escapes C0 controls itself; C1 controls, line separators and bidi overrides that a sender
 * put in an event are escaped too (the same JSON value), so no terminal acts on them.
 */
export function printLine(value: unknown): void {
  process.stdout.write(`${escapeTerminalControls(JSON.stringify(value))}\n`);
}

const TERMINAL_CONTROLS = /[\u0080-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

function escapeTerminalControls(json: string): string {
  return json.replace(TERMINAL_CONTROLS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Text from a sender for a human line: control characters (and bidi overrides) shown as `?`. */
export function printable(text: string): string {
  return text.replace(/[\p{Cc}\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu, '?');
}

export const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
