// The wire shapes of callbacks (docs/api.md §3.6), as the client sees them.

export type CallbackStatus = 'waiting' | 'completed' | 'expired' | 'cancelled';

export interface CreateCallback {
  /** Your own key, unique in the address: creating with it again returns the same callback. */
  key?: string;
  label?: string;
  expires_in_seconds?: number;
  complete_when?: { data_contains?: unknown; body_contains?: unknown };
  human?: { question: string; options: string[]; allow_comment?: boolean };
}

export interface Callback {
  id: string;
  key: string | null;
  /** The secret URL (read token only; null for a view token). */
  url: string | null;
  label: string | null;
  status: CallbackStatus;
  created_at: string;
  expires_at: string;
  completed_at: string | null;
  event_id: string | null;
  deliveries: number;
  complete_when: { data_contains?: unknown; body_contains?: unknown } | null;
  human: {
    question: string;
    options: string[];
    allow_comment: boolean;
    message?: string;
    answer: string | null;
    comment: string | null;
    answered_at: string | null;
  } | null;
}

export interface CallbackSelection {
  ids?: string[];
  key?: string;
  keyPrefix?: string;
  status?: CallbackStatus;
}
