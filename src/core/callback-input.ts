// What a callback request may hold (docs/api.md §3.6): its bounds, the checks of a create
// request and of a selection, and whether a delivery completes a callback — shared by the
// REST routes and the MCP tools through core/callbacks.ts.
import type { CompleteWhen, CreateCallback, HumanQuestion } from '../contract/callback-schemas.js';
import type { CallbackStatus } from '../storage/storage.js';
import { errors } from './errors.js';
import { jsonContains } from './json-contains.js';
import { jsonDepthExceeds } from './json-depth.js';
import { CALLBACK_LIMITS, TTL_MAX_SECONDS } from './limits.js';
import { refuseNul } from './storable-text.js';

export { CALLBACK_LIMITS };
export type { CompleteWhen, HumanQuestion };
/** A create request: the wire shape, checked again by checkCreateInput (MCP has no HTTP schema). */
export type CreateCallbackInput = CreateCallback;

/** A person's answer as stored in the completing event's data and on the callback. */
export interface HumanAnswer {
  answer: string;
  comment: string | null;
  answered_at: string;
}

export const CALLBACK_STATUSES: readonly CallbackStatus[] = ['waiting', 'completed', 'expired', 'cancelled'];

export const isCallbackStatus = (value: unknown): value is CallbackStatus =>
  CALLBACK_STATUSES.includes(value as CallbackStatus);

export function checkText(name: string, value: unknown, max: number, min = 1): string {
  if (typeof value !== 'string' || [...value].length < min || [...value].length > max)
    throw errors.invalidRequest({ message: `"${name}" must be text of ${min}–${max} characters.` });
  refuseNul(name, value);
  return value;
}

function checkPattern(name: string, value: unknown): void {
  if (value === undefined) return;
  if (value === null || typeof value !== 'object')
    throw errors.invalidRequest({ message: `"complete_when.${name}" must be a JSON object or array.` });
  if (jsonDepthExceeds(value, CALLBACK_LIMITS.patternDepth) || JSON.stringify(value).length > CALLBACK_LIMITS.pattern)
    throw errors.invalidRequest({
      message: `"complete_when.${name}" may be at most ${CALLBACK_LIMITS.pattern} characters of JSON, ${CALLBACK_LIMITS.patternDepth} levels deep.`,
    });
}

/** Checks a create request's fields (the HTTP schema checks their types too; MCP relies on this). */
export function checkCreateInput(input: CreateCallbackInput): void {
  if (input.key !== undefined) checkText('key', input.key, CALLBACK_LIMITS.key);
  if (input.label !== undefined) checkText('label', input.label, CALLBACK_LIMITS.label);
  const ttl = input.expires_in_seconds;
  if (ttl !== undefined && (!Number.isInteger(ttl) || ttl < 1 || ttl > TTL_MAX_SECONDS))
    throw errors.invalidRequest({
      message: `"expires_in_seconds" must be a whole number of seconds, 1–${TTL_MAX_SECONDS}.`,
    });
  const when = input.complete_when;
  if (when !== undefined) {
    if (when === null || typeof when !== 'object' || Array.isArray(when))
      throw errors.invalidRequest({
        message: '"complete_when" must be an object with "data_contains" or "body_contains".',
      });
    const keys = Object.keys(when);
    if (keys.length !== 1 || !['data_contains', 'body_contains'].includes(keys[0]))
      throw errors.invalidRequest({
        message: '"complete_when" takes exactly one of "data_contains" and "body_contains".',
      });
    checkPattern('data_contains', when.data_contains);
    checkPattern('body_contains', when.body_contains);
  }
  const human = input.human;
  if (human !== undefined) {
    if (human === null || typeof human !== 'object')
      throw errors.invalidRequest({ message: '"human" must be an object.' });
    checkText('human.question', human.question, CALLBACK_LIMITS.question);
    const options = human.options as unknown;
    if (!Array.isArray(options) || options.length < 1 || options.length > CALLBACK_LIMITS.options)
      throw errors.invalidRequest({ message: `"human.options" must be 1–${CALLBACK_LIMITS.options} strings.` });
    options.forEach((option, i) => checkText(`human.options[${i}]`, option, CALLBACK_LIMITS.option));
    if (new Set(options).size !== options.length)
      throw errors.invalidRequest({ message: '"human.options" must differ from each other.' });
    if (human.allow_comment !== undefined && typeof human.allow_comment !== 'boolean')
      throw errors.invalidRequest({ message: '"human.allow_comment" must be true or false.' });
    if (when !== undefined)
      throw errors.invalidRequest({
        message: '"complete_when" and "human" do not go together: the answer completes it.',
      });
  }
}

/** Whether a delivery's data completes a callback with this complete_when (none: any delivery). */
export function completes(when: CompleteWhen | null, data: unknown): boolean {
  if (when === null) return true;
  if (when.data_contains !== undefined) return jsonContains(data, when.data_contains);
  const body = data !== null && typeof data === 'object' ? (data as { body?: unknown }).body : undefined;
  return jsonContains(body, when.body_contains);
}
