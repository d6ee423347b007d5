// Every provider an address's sender can be set to, by name (docs/api.md §3.2). A provider
// is one module in ./providers exporting a SenderProvider, and one line here.
import { PROVIDER_NAMES, type ProviderName, type SenderProvider } from './provider.js';
import { dropboxProvider } from './providers/dropbox.js';
import { githubProvider } from './providers/github.js';
import { hmacSha256Provider } from './providers/hmac-sha256.js';
import { linearProvider } from './providers/linear.js';
import { metaProvider } from './providers/meta.js';
import { microsoftGraphProvider } from './providers/microsoft-graph.js';
import { shopifyProvider } from './providers/shopify.js';
import { slackProvider } from './providers/slack.js';
import { standardWebhooksProvider } from './providers/standard-webhooks.js';
import { stripeProvider } from './providers/stripe.js';
import { twilioProvider } from './providers/twilio.js';
import { twitchProvider } from './providers/twitch.js';
import { zoomProvider } from './providers/zoom.js';

// A record over ProviderName: the compiler refuses a provider name without its scheme.
const PROVIDERS: Record<ProviderName, SenderProvider> = {
  github: githubProvider,
  stripe: stripeProvider,
  slack: slackProvider,
  standard_webhooks: standardWebhooksProvider,
  shopify: shopifyProvider,
  twilio: twilioProvider,
  meta: metaProvider,
  microsoft_graph: microsoftGraphProvider,
  zoom: zoomProvider,
  dropbox: dropboxProvider,
  twitch: twitchProvider,
  linear: linearProvider,
  hmac_sha256: hmacSha256Provider,
};

/** The provider of this name (as stored), or undefined for a name this version does not know. */
export function senderProvider(name: string): SenderProvider | undefined {
  return (PROVIDER_NAMES as readonly string[]).includes(name) ? PROVIDERS[name as ProviderName] : undefined;
}
