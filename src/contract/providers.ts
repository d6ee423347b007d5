// The signature schemes an address's sender can name (docs/api.md §3.2): a wire enum, so it
// lives with the contract; each one's verification is in src/core/senders/providers/.

/** The providers an address's sender can be set to. */
export const PROVIDER_NAMES = [
  'github',
  'stripe',
  'slack',
  'standard_webhooks',
  'shopify',
  'twilio',
  'meta',
  'microsoft_graph',
  'zoom',
  'dropbox',
  'twitch',
  'linear',
  'hmac_sha256',
] as const;

export type ProviderName = (typeof PROVIDER_NAMES)[number];
