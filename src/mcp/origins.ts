// Which Host and Origin headers the MCP endpoints accept (MCP transport spec, "Security
// Warning": DNS rebinding). The loopback names of one port are one origin when the service
// is reached on loopback; without a configured base URL only loopback Host names are
// accepted, since the service cannot know its public name.

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]'];

/** Whether a URL hostname is a loopback name (localhost, 127.0.0.0/8, ::1). */
export function isLoopbackHostname(hostname: string): boolean {
  return (
    hostname === 'localhost' ||
    hostname.endsWith('.localhost') ||
    hostname === '[::1]' ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname)
  );
}

export interface OriginPolicy {
  /** Whether a Host header names this service. */
  hostAllowed(host: string | undefined): boolean;
  /** Whether a browser Origin may call the endpoints. */
  originAllowed(origin: string): boolean;
}

/** The URL a Host header names under the base URL's scheme, or undefined when it names none. */
function hostUrl(host: string | undefined, protocol: string): URL | undefined {
  // A Host header is a name and a port: nothing else may ride along ("a@b", "a/b").
  if (host === undefined || host === '' || /[\s@/\\?#]/.test(host)) return undefined;
  try {
    return new URL(`${protocol}//${host}`);
  } catch {
    return undefined;
  }
}

/**
 * The policy for a base URL. `fromPort`: no base URL was configured (it was made up from the
 * listening port), so only loopback names of that port are believed.
 */
export function originPolicy(baseUrl: string, fromPort: boolean, allowedOrigins: readonly string[]): OriginPolicy {
  const base = new URL(baseUrl);
  const loopback = fromPort || isLoopbackHostname(base.hostname);
  const ownOrigins = new Set([base.origin]);
  if (loopback) {
    for (const name of LOOPBACK_NAMES) ownOrigins.add(`${base.protocol}//${name}${base.port ? `:${base.port}` : ''}`);
  }
  const allowed = new Set(allowedOrigins);
  return {
    hostAllowed(host) {
      const seen = hostUrl(host, base.protocol);
      if (!seen) return false;
      if (loopback) return isLoopbackHostname(seen.hostname) && seen.port === base.port;
      return seen.hostname === base.hostname && seen.port === base.port;
    },
    originAllowed(origin) {
      return ownOrigins.has(origin) || allowed.has(origin);
    },
  };
}
