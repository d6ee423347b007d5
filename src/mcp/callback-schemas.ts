// The zod schemas of the callback tools (docs/mcp.md): create_callback, wait_for_callbacks,
// list_callbacks, cancel_callback. Bounds as REST's (core/callbacks.ts CALLBACK_LIMITS).
import { z } from 'zod';
import { WAIT_MAX_SECONDS } from '../core/limits.js';
import { addressArguments } from './schemas.js';

const status = z.enum(['waiting', 'completed', 'expired', 'cancelled']);

// Bounds are checked by the core (core/callbacks.ts, as for REST) and said in docs/mcp.md:
// tools/list is context a model pays for on every turn.
export function createCallbackInput(bound: boolean) {
  return z.strictObject({
    ...addressArguments(bound),
    key: z.string().optional(),
    label: z.string().optional(),
    expires_in_seconds: z.number().int().optional(),
    complete_when: z.strictObject({ data_contains: z.unknown(), body_contains: z.unknown() }).partial().optional(),
    human: z
      .strictObject({ question: z.string(), options: z.array(z.string()), allow_comment: z.boolean().optional() })
      .optional(),
  });
}

const selection = {
  ids: z.array(z.string()).optional(),
  key: z.string().optional(),
  key_prefix: z.string().optional(),
};

export function waitCallbacksInput(bound: boolean) {
  return z.strictObject({
    ...addressArguments(bound),
    ...selection,
    mode: z.enum(['any', 'all']).optional(),
    wait: z.number().int().min(0).max(WAIT_MAX_SECONDS).optional(),
  });
}

export function listCallbacksInput(bound: boolean) {
  return z.strictObject({ ...addressArguments(bound), ...selection, status: status.optional() });
}

export function cancelCallbackInput(bound: boolean) {
  return z.strictObject({ ...addressArguments(bound), callback_id: z.string() });
}

const nullableText = z.string().nullable();

export const callbackShape = z.object({
  id: z.string(),
  key: nullableText,
  url: nullableText,
  label: nullableText,
  status,
  created_at: z.string(),
  expires_at: z.string(),
  completed_at: nullableText,
  event_id: nullableText,
  deliveries: z.number().int(),
  complete_when: z.record(z.string(), z.unknown()).nullable(),
  human: z
    .object({
      question: z.string(),
      options: z.array(z.string()),
      allow_comment: z.boolean(),
      message: z.string().optional(),
      answer: nullableText,
      comment: nullableText,
      answered_at: nullableText,
    })
    .nullable(),
});

export const callbackOutput = z.strictObject({ callback: callbackShape });
export const callbackListOutput = z.strictObject({ callbacks: z.array(callbackShape) });

/** What a wait returns: compact, one line per callback. */
export const waitCallbacksOutput = z.strictObject({
  done: z.boolean(),
  callbacks: z.array(
    z.object({
      id: z.string(),
      key: nullableText,
      status,
      body: z
        .unknown()
        .describe("The completing delivery's body (a person's answer: {answer, comment, answered_at}), or null."),
    }),
  ),
});
