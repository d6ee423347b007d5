// Every provider an address's sender can be set to, by name (docs/api.md §3.2). A provider
// is one module in ./providers exporting a SenderProvider, and one line here.
import { PROVIDER_NAMES, type ProviderName, type SenderProvider } from './provider.js';
import { github } from './providers/github.js';
import { hmacSha256 } from './providers/hmac-sha256.js';

const PROVIDERS: readonly SenderProvider[] = [github, hmacSha256];

const byName = new Map<string, SenderProvider>(PROVIDERS.map((provider) => [provider.name, provider]));

/** The provider of this name, or undefined when none is registered. */
export function senderProvider(name: string): SenderProvider | undefined {
  return byName.get(name);
}

/** The names a sender may be set to now, in the order of PROVIDER_NAMES. */
export function registeredProviders(): ProviderName[] {
  return PROVIDER_NAMES.filter((name) => byName.has(name));
}
