// The package's entry point (`import { RoostClient } from 'roost'`): the typed client for
// talking to a Roost service, the wire types it speaks, and startRoost/loadConfig for
// running the service inside another Node program. A program that only talks to a service
// imports 'roost/client', which loads none of the server's modules.
import './require-node.js';
export {
  RoostClient,
  RoostError,
  RoostNetworkError,
  fromCredentials,
  parseCredentials,
  forwardEvents,
  readCursorFile,
  writeCursorFile,
  CLIENT_VERSION,
} from './client/index.js';
export type {
  RoostClientOptions,
  ListEventsOptions,
  DeliverOptions,
  EventsOptions,
  SavedCredentials,
  BackoffOptions,
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

export { startRoost, type RunningRoost, type StartOptions } from './server.js';
export { loadConfig, ConfigError, ENV_VARS, type Config } from './config.js';
