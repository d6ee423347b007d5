// Callbacks as the client sees them (docs/api.md §3.6): the wire shapes are the contract's;
// the selection is the client's own spelling of the list query.
import type { CallbackStatus } from '../contract/callback-schemas.js';

export type { Callback, CallbackStatus, CreateCallback } from '../contract/callback-schemas.js';

export interface CallbackSelection {
  ids?: string[];
  key?: string;
  keyPrefix?: string;
  status?: CallbackStatus;
}
