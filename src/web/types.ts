// The wire shapes the page reads (src/contract/schemas.ts is their source; the page is built apart).
export interface Address {
  id: string;
  slug: string;
  name: string;
  taskId?: string;
  email: string;
  createdAt: string;
  expiresAt?: string;
}

export interface RoostEvent {
  id: string;
  address_id: string;
  sequence: number;
  type: string;
  source: string;
  data: unknown;
  metadata?: Record<string, string>;
  dedupe_key?: string;
  created_at: string;
  acknowledged_at?: string;
}

/** A read token may do everything; a view token (roost_view_…) only reads. */
export interface Credentials {
  token: string;
  /** The inbox URL, when the person gave it (fragment or pasted creation response). */
  inboxUrl?: string;
}

export const isViewToken = (token: string) => token.startsWith('roost_view_');
