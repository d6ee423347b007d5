// SPF, DKIM and DMARC for an inbound message (mailauth), summarised so that an agent can
// tell genuine mail from a spoofed one without reading Authentication-Results syntax.
// Runs in the email worker thread (process-worker.ts), which a deadline stops; DNS answers
// come from the event loop (processor.ts), which bounds their number and their time.
import { domainToASCII, domainToUnicode } from 'node:url';
import { getDomain } from 'tldts';

/** mailauth and its dependencies are loaded with the first message, not at start: a service without mail need not carry them. */
let mailauth: Promise<typeof import('mailauth')> | undefined;
const loadMailauth = () => (mailauth ??= import('mailauth'));

/** mailauth's resolver shape: like dns.promises.resolve (TXT answers are string[][]). */
export type DnsResolver = (name: string, rrtype: string) => Promise<unknown>;

export type AuthResult = 'pass' | 'fail' | 'softfail' | 'neutral' | 'none' | 'temperror' | 'permerror' | 'policy';

export interface AuthenticationSummary {
  /** SPF for the envelope sender (or the HELO name for bounces) against the client IP. */
  spf: AuthResult;
  /** The domain SPF was evaluated for. */
  spf_domain: string | null;
  /** One entry per DKIM-Signature header. `aligned` = the signing domain matches From. */
  dkim: Array<{
    domain: string;
    selector: string | null;
    result: AuthResult;
    aligned: boolean;
    comment: string | null;
  }>;
  /** DMARC for the From domain; `none` when the domain publishes no policy. */
  dmarc: AuthResult;
  /** The domain of the From header that all of this is about. */
  from_domain: string | null;
  /**
   * pass: the From domain is vouched for (DMARC pass, or — without a DMARC policy — an
   * aligned DKIM or SPF pass). fail: a check failed and nothing aligned passed; treat the
   * From header as forged. none: nothing could be verified (unsigned mail, no records,
   * DNS unreachable); the From header is unproven.
   */
  verdict: 'pass' | 'fail' | 'none';
  note: string;
}

export interface AuthenticateInput {
  raw: Buffer;
  /** The connecting client's IP address. */
  ip: string;
  /** The name the client gave in EHLO/HELO. */
  helo: string;
  /** MAIL FROM, empty for bounces. */
  sender: string;
  /** Our own host name, for the Authentication-Results vocabulary. */
  mta: string;
  /** The From address the event shows (data.from); the verdict is about its domain. */
  from: string | null;
  /** Mailboxes in all From headers; more than one fails (RFC 7489 §6.6.1), none proves nothing. */
  fromMailboxes: number;
}

/** DKIM-Signature headers checked per message; the rest are ignored (each costs a body hash and a DNS lookup). */
export const MAX_DKIM_SIGNATURES = 5;

const NOTE =
  'verdict pass means the From domain vouched for this message (DMARC, or an aligned DKIM/SPF pass); ' +
  'fail means a check failed and the From header is probably forged; none means it could not be verified.';

const RESULTS: readonly string[] = ['pass', 'fail', 'softfail', 'neutral', 'none', 'temperror', 'permerror', 'policy'];

function normalise(result: unknown): AuthResult {
  const text = typeof result === 'string' ? result.toLowerCase() : 'none';
  if (text === 'temperr') return 'temperror';
  return (RESULTS.includes(text) ? text : 'none') as AuthResult;
}

/** A domain as a reader writes it: Unicode labels, whether the sender wrote them so or in punycode (xn--). */
const readable = (domain: string) => domainToUnicode(domain) || domain;
/** The same domain in ASCII (punycode), for comparing one written either way with another. */
const comparable = (domain: string) => domainToASCII(domain) || domain;

const domainOf = (address: string | null | undefined) =>
  address && address.includes('@') ? readable(address.slice(address.lastIndexOf('@') + 1).toLowerCase()) : null;

/** What the check says when it could not finish: nothing verified. */
export function unverified(input: Pick<AuthenticateInput, 'sender' | 'from'>, why: string): AuthenticationSummary {
  return {
    spf: 'temperror',
    spf_domain: domainOf(input.sender),
    dkim: [],
    dmarc: 'temperror',
    from_domain: domainOf(input.from),
    verdict: 'none',
    note: `${NOTE} ${why}`,
  };
}

export function judge(
  spf: AuthResult,
  spfAligned: boolean,
  dkim: AuthenticationSummary['dkim'],
  dmarc: AuthResult,
): AuthenticationSummary['verdict'] {
  if (dmarc === 'pass') return 'pass';
  if (dmarc === 'fail') return 'fail';
  // No DMARC verdict (no policy published, or the lookup failed): apply its alignment rule.
  if (dkim.some((d) => d.result === 'pass' && d.aligned) || (spf === 'pass' && spfAligned)) return 'pass';
  if (spf === 'fail' || dkim.some((d) => d.result === 'fail')) return 'fail';
  return 'none';
}

/**
 * Relaxed alignment (RFC 7489 §3.2): the same organizational domain, by the Public Suffix
 * List with its private section (so evil.duckdns.org and duckdns.org are two owners). A name
 * the list cannot place (a bare suffix, "localhost") aligns only with itself.
 */
export function aligned(a: string | null | undefined, b: string | null | undefined): boolean {
  if (!a || !b) return false;
  const x = comparable(a.toLowerCase().replace(/\.$/, ''));
  const y = comparable(b.toLowerCase().replace(/\.$/, ''));
  if (x === y) return true;
  const orgX = getDomain(x, { allowPrivateDomains: true });
  return orgX !== null && orgX === getDomain(y, { allowPrivateDomains: true });
}

/**
 * The raw message as the check reads it. With DKIM-Signature fields, those past the first
 * MAX_DKIM_SIGNATURES are removed: mailauth hashes the body once per distinct l= and looks a
 * key up per signature, so a sender could otherwise make one message cost 1,000 of each.
 * With none, only the header block: there is no body to hash (ARC, which would hash it too,
 * is not checked), and mailauth would read the whole message all the same (BENCHMARKS.md,
 * "header block alone").
 */
export function checkedBytes(raw: Buffer): Buffer {
  let end = raw.indexOf('\r\n\r\n');
  if (end < 0) end = raw.length;
  const head = raw.subarray(0, end).toString('latin1');
  // Searched as text, not by field: a header block with bare line feeds is not split below.
  if (!/dkim-signature/i.test(head)) return end === raw.length ? raw : raw.subarray(0, end + 4);
  const fields = head.split(/\r\n(?![ \t])/);
  let seen = 0;
  const kept = fields.filter((field) => !/^dkim-signature\s*:/i.test(field) || ++seen <= MAX_DKIM_SIGNATURES);
  if (kept.length === fields.length) return raw;
  return Buffer.concat([Buffer.from(kept.join('\r\n'), 'latin1'), raw.subarray(end)]);
}

export async function authenticate(input: AuthenticateInput, resolver: DnsResolver): Promise<AuthenticationSummary> {
  const { authenticate: mailauthAuthenticate } = await loadMailauth();
  const result = await mailauthAuthenticate(checkedBytes(input.raw), {
    ip: input.ip,
    helo: input.helo,
    sender: input.sender,
    mta: input.mta,
    resolver: resolver as never,
    disableArc: true,
    disableBimi: true,
  });
  // Judged against the address the event shows, never one the reader does not see.
  const fromDomain = domainOf(input.from);
  const checkedDomain = domainOf((result.dkim as { headerFrom?: string[] } | undefined)?.headerFrom?.[0]);
  const dkim = (
    (result.dkim?.results ?? []) as Array<{
      signingDomain?: string;
      selector?: string;
      status?: { result?: string; comment?: string | false };
    }>
  )
    // An unsigned message still yields one row, "none" with no domain: not a signature.
    .filter((row) => row.signingDomain)
    .map((row) => {
      const comment = row.status?.comment || null;
      // mailauth says "neutral" when the body hash does not match; RFC 6376 §6.1.3 calls
      // that a failed signature — the body was changed after signing — and so do we.
      const result = comment === 'body hash did not verify' ? 'fail' : normalise(row.status?.result);
      return {
        domain: readable((row.signingDomain ?? '').toLowerCase()),
        selector: row.selector ?? null,
        result,
        aligned: aligned(row.signingDomain, fromDomain),
        comment,
      };
    });
  const spfStatus = result.spf ? normalise((result.spf as { status?: { result?: string } }).status?.result) : 'none';
  const spfChecked = result.spf ? (result.spf as { domain?: string }).domain : undefined;
  const spfDomain = spfChecked ? readable(spfChecked.toLowerCase()) : null;
  const dmarc = result.dmarc ? normalise((result.dmarc as { status?: { result?: string } }).status?.result) : 'none';
  const summary: AuthenticationSummary = {
    spf: spfStatus,
    spf_domain: spfDomain,
    dkim,
    dmarc,
    from_domain: fromDomain,
    verdict: judge(spfStatus, aligned(spfDomain, fromDomain), dkim, dmarc),
    note: NOTE,
  };
  // RFC 7489 §6.6.1: a message with several From mailboxes, or none, has no one author
  // domain to vouch for it; and a DMARC result about another address than the one shown
  // says nothing about it.
  if (input.fromMailboxes > 1) {
    summary.verdict = 'fail';
    summary.note = `${NOTE} The message has more than one From mailbox, so no one domain vouches for it.`;
  } else if (input.fromMailboxes === 0) {
    summary.verdict = 'none';
    summary.note = `${NOTE} The message has no From mailbox.`;
  } else if (fromDomain !== checkedDomain) {
    summary.verdict = 'fail';
    summary.note = `${NOTE} The From header could not be read unambiguously.`;
  }
  return summary;
}
