// The client SDK's public surface: the client, its errors and the helpers around it.
export { RoostClient, CLIENT_VERSION } from './client.js';
export type {
  RoostClientOptions,
  ListEventsOptions,
  DeliverOptions,
  EventsOptions,
  EventFilterOptions,
} from './client.js';
export { RoostError, RoostNetworkError } from './errors.js';
export { parseCredentials, type SavedCredentials } from './credentials.js';
export { backoffDelay, type BackoffOptions } from './backoff.js';
export { retryTransient, type RetryOptions } from './retry.js';
export { forwardEvents, type ForwardOptions } from './forwarder.js';
export { readCursorFile, writeCursorFile } from './cursor-file.js';
export type { Callback, CallbackSelection, CallbackStatus, CreateCallback } from './callback-types.js';

import type { CreateAddressResponse } from '../contract/schemas.js';
import { RoostClient, type RoostClientOptions } from './client.js';

/** A client for the address of a saved creation response (object or JSON text). */
export function fromCredentials(
  saved: CreateAddressResponse | string,
  options: Partial<RoostClientOptions> = {},
): RoostClient {
  return RoostClient.fromCredentials(saved, options);
}
