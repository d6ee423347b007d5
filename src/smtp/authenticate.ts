// SPF, DKIM and DMARC for an inbound message (mailauth), summarised so that an agent can
// tell genuine mail from a spoofed one without reading Authentication-Results syntax.
// DNS is the one outside dependency: the resolver is injectable (tests run offline) and
// every lookup is bounded, so a dead resolver costs seconds and records `temperror` — it
// never holds up acceptance (CONTRACT §8: 250 only after the event is durable, and soon).
import { promises as dns } from 'node:dns';

/** mailauth (~30 MiB with its dependencies) is loaded with the first message, not at start. */
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
}

export interface AuthenticatorOptions {
  /** Injected for tests; default: the system's DNS with a short per-query timeout. */
  resolver?: DnsResolver;
  /** Upper bound for the whole check; after it, every result not yet known is temperror. */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 5_000;

const NOTE =
  'verdict pass means the From domain vouched for this message (DMARC, or an aligned DKIM/SPF pass); ' +
  'fail means a check failed and the From header is probably forged; none means it could not be verified.';

const RESULTS: readonly string[] = ['pass', 'fail', 'softfail', 'neutral', 'none', 'temperror', 'permerror', 'policy'];

function normalise(result: unknown): AuthResult {
  const text = typeof result === 'string' ? result.toLowerCase() : 'none';
  if (text === 'temperr') return 'temperror';
  return (RESULTS.includes(text) ? text : 'none') as AuthResult;
}

/** The system resolver, bounded: one server answer within 2 s, two tries, per query. */
function systemResolver(): DnsResolver {
  const resolver = new dns.Resolver({ timeout: 2_000, tries: 2 });
  return (name, rrtype) => resolver.resolve(name, rrtype);
}

function timedOut(sender: string, ip: string): AuthenticationSummary {
  return {
    spf: 'temperror',
    spf_domain: sender.includes('@') ? sender.split('@').pop()!.toLowerCase() : null,
    dkim: [],
    dmarc: 'temperror',
    from_domain: null,
    verdict: 'none',
    note: `${NOTE} DNS did not answer in time (client ${ip}), so nothing was verified.`,
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

/** Relaxed alignment (RFC 7489 §3.1): same domain, or one a subdomain of the other's. */
function aligned(a: string | null | undefined, b: string | null | undefined): boolean {
  if (!a || !b) return false;
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  return x === y || x.endsWith(`.${y}`) || y.endsWith(`.${x}`);
}

export class Authenticator {
  private readonly resolver: DnsResolver;
  private readonly timeoutMs: number;

  constructor(options: AuthenticatorOptions = {}) {
    this.resolver = options.resolver ?? systemResolver();
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  async check(input: AuthenticateInput): Promise<AuthenticationSummary> {
    // Loading the module is not part of the DNS budget below.
    const { authenticate: mailauthAuthenticate } = await loadMailauth();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), this.timeoutMs);
    });
    try {
      const result = await Promise.race([this.run(mailauthAuthenticate, input), deadline]);
      return result ?? timedOut(input.sender, input.ip);
    } catch {
      // mailauth rejects only on unexpected input; an unverifiable message is not an error.
      return { ...timedOut(input.sender, input.ip), note: `${NOTE} The message could not be checked.` };
    } finally {
      clearTimeout(timer);
    }
  }

  private async run(
    mailauthAuthenticate: (typeof import('mailauth'))['authenticate'],
    input: AuthenticateInput,
  ): Promise<AuthenticationSummary> {
    const result = await mailauthAuthenticate(input.raw, {
      ip: input.ip,
      helo: input.helo,
      sender: input.sender,
      mta: input.mta,
      resolver: this.resolver as never,
      disableArc: true,
      disableBimi: true,
    });
    const fromDomain =
      (result.dkim as { headerFrom?: string[] } | undefined)?.headerFrom?.[0]?.split('@').pop()?.toLowerCase() ?? null;
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
          domain: (row.signingDomain ?? '').toLowerCase(),
          selector: row.selector ?? null,
          result,
          aligned: aligned(row.signingDomain, fromDomain),
          comment,
        };
      });
    const spfStatus = result.spf ? normalise((result.spf as { status?: { result?: string } }).status?.result) : 'none';
    const spfDomain = result.spf ? ((result.spf as { domain?: string }).domain ?? null) : null;
    const dmarc = result.dmarc ? normalise((result.dmarc as { status?: { result?: string } }).status?.result) : 'none';
    return {
      spf: spfStatus,
      spf_domain: spfDomain,
      dkim,
      dmarc,
      from_domain: fromDomain,
      verdict: judge(spfStatus, aligned(spfDomain, fromDomain), dkim, dmarc),
      note: NOTE,
    };
  }
}
