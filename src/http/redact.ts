// Inbox paths carry the ingress secret: wherever a URL is logged or echoed, the secret
// segment is cut out first (CONTRACT §1).
export function redactUrl(url: string): string {
  return url.replace(/(\/inbox\/[^/?#]+\/)[^/?#]+/, '$1[REDACTED]');
}
