// The `roost/client` entry: the typed client and the wire types it speaks, and nothing of
// the server (no Fastify, SQLite addon, SMTP, PostgreSQL, logger or metrics), so that an
// agent that only talks to a Roost service loads the client alone.
export {
  RoostClient,
  RoostError,
  RoostNetworkError,
  fromCredentials,
  parseCredentials,
  forwardEvents,
  readCursorFile,
  writeCursorFile,
  backoffDelay,
  retryTransient,
  CLIENT_VERSION,
} from './client/index.js';
export type {
  RoostClientOptions,
  ListEventsOptions,
  DeliverOptions,
  EventsOptions,
  SavedCredentials,
  BackoffOptions,
  RetryOptions,
  ForwardOptions,
} from './client/index.js';

export type {
  Address,
  AddressResponse,
  CreateAddress,
  CreateAddressResponse,
  Event,
  CreateEvent,
  EventPage,
  EventResponse,
  EventDeliveryResponse,
  ErrorBody,
  ListEventsQuery,
} from './schemas.js';
export type { PutSender, Sender, SenderResponse } from './sender-schemas.js';
