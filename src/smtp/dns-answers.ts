// DNS answers an email worker was given, kept for a minute so that mail from the same domains
// does not ask the same questions again. Each question is a round trip between the worker and
// the event loop (processor.ts): two thread wake-ups, CPU on both sides and, while it lasts, a
// worker held by the message. Mail to agents tends to come from a few senders (notifications,
// builds, sign-ups), so many questions are repeats (BENCHMARKS.md, SMTP).
// Kept: records, and the definite "no such name" / "no such record". Never kept: a timeout
// or a server failure, which the next message asks again, so a resolver that recovers is
// heard at once.

/** How long an answer is used: shorter than the TTL of almost any SPF, DKIM or DMARC record. */
export const DNS_ANSWER_TTL_MS = 60_000;
/** Answers kept per worker; the oldest goes first. */
export const DNS_ANSWERS_KEPT = 1_000;
/** Answers larger than this (JSON characters) are not kept, so the whole store stays a few MiB. */
const MAX_ANSWER_CHARS = 4_096;
/** The error codes that are DNS's own answer about the name, not a failure to get one. */
const DEFINITE = new Set(['ENOTFOUND', 'ENODATA']);

export type DnsOutcome = { ok: true; value: unknown } | { ok: false; message: string; code?: string };

const keyOf = (name: string, rrtype: string) => `${rrtype.toUpperCase()} ${name.toLowerCase().replace(/\.$/, '')}`;

export class DnsAnswers {
  private readonly kept = new Map<string, { outcome: DnsOutcome; until: number }>();

  constructor(
    private readonly ttlMs = DNS_ANSWER_TTL_MS,
    private readonly capacity = DNS_ANSWERS_KEPT,
  ) {}

  get size(): number {
    return this.kept.size;
  }

  /** A copy of the answer given within the last ttlMs, or undefined. */
  get(name: string, rrtype: string, now: number): DnsOutcome | undefined {
    const key = keyOf(name, rrtype);
    const entry = this.kept.get(key);
    if (!entry) return undefined;
    if (entry.until <= now) {
      this.kept.delete(key);
      return undefined;
    }
    // A copy each time: what one message's checks do with an answer cannot change the next's.
    return entry.outcome.ok ? { ok: true, value: structuredClone(entry.outcome.value) } : { ...entry.outcome };
  }

  put(name: string, rrtype: string, outcome: DnsOutcome, now: number): void {
    if (!outcome.ok && !DEFINITE.has(outcome.code ?? '')) return;
    if (outcome.ok && (JSON.stringify(outcome.value) ?? '').length > MAX_ANSWER_CHARS) return;
    const key = keyOf(name, rrtype);
    this.kept.delete(key);
    if (this.kept.size >= this.capacity) this.kept.delete(this.kept.keys().next().value!);
    const kept: DnsOutcome = outcome.ok
      ? { ok: true, value: structuredClone(outcome.value) }
      : { ok: false, message: outcome.message, code: outcome.code };
    this.kept.set(key, { outcome: kept, until: now + this.ttlMs });
  }
}
