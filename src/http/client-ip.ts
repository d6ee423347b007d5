// Who the client is (docs/api.md §9): the address the create rate limit is keyed by.
// Behind proxies the client is the rightmost X-Forwarded-For entry that is not a trusted
// proxy — the entries left of it are written by the client and prove nothing.
import { isIPv6 } from 'node:net';
import type { Config } from '../config.js';

/** Fastify's trustProxy as a function: proxy-addr asks it about each hop, nearest first (i = 0 is the socket's peer). */
export type TrustFunction = (address: string, hop: number) => boolean;

/**
 * Fastify's trustProxy for the configured trust: false, a hop count (the nearest `hops`
 * addresses are proxies; Fastify itself ignores a bare number), or proxy-addr's list.
 */
export function fastifyTrustProxy(trust: Config['trustProxy']): false | string[] | TrustFunction {
  if (typeof trust === 'number') {
    const hops = trust;
    return (_address, hop) => hop < hops;
  }
  return trust;
}

/** One line for the start-up log: how the client IP is found. */
export function describeClientIp(trust: Config['trustProxy']): string {
  if (trust === false) return 'the socket peer (X-Forwarded-For ignored)';
  if (typeof trust === 'number')
    return trust === 1
      ? 'the rightmost X-Forwarded-For entry (1 trusted hop)'
      : `the X-Forwarded-For entry ${trust} hops from the socket (${trust} trusted hops)`;
  return `the rightmost X-Forwarded-For entry not in ${trust.join(', ')}`;
}

/**
 * The key a per-client limit counts under: the IPv4 address, or an IPv6 address's /64 —
 * one host is usually given a whole /64, so a limit keyed by the full address is a limit
 * of 2^64 keys.
 */
export function clientKey(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1];
  if (!isIPv6(ip)) return ip;
  const [head, tail = ''] = ip.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  // An embedded IPv4 tail counts as two groups; it never reaches the first four.
  const groups = ip.includes('::')
    ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right]
    : left;
  return `${groups
    .slice(0, 4)
    .map((group) => parseInt(group, 16).toString(16))
    .join(':')}::/64`;
}
