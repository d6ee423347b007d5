// The wire shapes of callbacks (docs/api.md §3.6), written once: the REST routes validate and
// serialise with them, the core answers in them and the client is typed by them.
import { Type, type Static } from 'typebox';
import { CALLBACK_LIMITS, TTL_MAX_SECONDS } from '../core/limits.js';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

const Pattern = Type.Union([Type.Object({}, { additionalProperties: true }), Type.Array(Type.Unknown())], {
  description: 'JSON the delivery must contain (objects: a subset of keys; arrays: their elements; scalars: equal).',
});

export const CallbackStatusSchema = Type.Union([
  Type.Literal('waiting'),
  Type.Literal('completed'),
  Type.Literal('expired'),
  Type.Literal('cancelled'),
]);
export type CallbackStatus = Static<typeof CallbackStatusSchema>;

export const CompleteWhenSchema = Type.Object(
  {
    data_contains: Type.Optional(Pattern),
    body_contains: Type.Optional(Pattern),
  },
  {
    additionalProperties: false,
    description:
      "Which delivery completes the callback: one whose event `data` contains `data_contains`, or whose `data.body` (the delivery's parsed body) contains `body_contains`. Without it, the first delivery does.",
  },
);
export type CompleteWhen = Static<typeof CompleteWhenSchema>;

export const HumanSchema = Type.Object(
  {
    question: Type.String({ minLength: 1, maxLength: CALLBACK_LIMITS.question }),
    options: Type.Array(Type.String({ minLength: 1, maxLength: CALLBACK_LIMITS.option }), {
      minItems: 1,
      maxItems: CALLBACK_LIMITS.options,
    }),
    allow_comment: Type.Optional(Type.Boolean()),
  },
  {
    additionalProperties: false,
    description:
      'A question for a person: GET {url} in a browser shows it with one button per option; the answer completes the callback. Anyone holding the URL can answer.',
  },
);
export type HumanQuestion = Static<typeof HumanSchema>;

export const CreateCallbackSchema = Type.Object(
  {
    key: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: CALLBACK_LIMITS.key,
        description: 'Your own key, unique in the address: creating with it again returns the same callback (200).',
      }),
    ),
    label: Type.Optional(Type.String({ minLength: 1, maxLength: CALLBACK_LIMITS.label })),
    expires_in_seconds: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: TTL_MAX_SECONDS,
        description: "Default: the address's expiry, else 7 days; never past the address's.",
      }),
    ),
    complete_when: Type.Optional(CompleteWhenSchema),
    human: Type.Optional(HumanSchema),
  },
  { additionalProperties: false, title: 'CreateCallback' },
);
export type CreateCallback = Static<typeof CreateCallbackSchema>;

export const CallbackSchema = Type.Object(
  {
    id: Type.String({ description: 'cb_…' }),
    key: Nullable(Type.String()),
    url: Nullable(
      Type.String({
        description:
          'The secret URL to hand to the sender (or the person). Shown to the read token; null for a view token.',
      }),
    ),
    label: Nullable(Type.String()),
    status: CallbackStatusSchema,
    created_at: Type.String({ format: 'date-time' }),
    expires_at: Type.String({ format: 'date-time' }),
    completed_at: Nullable(Type.String({ format: 'date-time' })),
    event_id: Nullable(Type.String({ description: 'The completing delivery, an event of the queue.' })),
    deliveries: Type.Integer({ minimum: 0 }),
    complete_when: Nullable(CompleteWhenSchema),
    human: Nullable(
      Type.Object({
        question: Type.String(),
        options: Type.Array(Type.String()),
        allow_comment: Type.Boolean(),
        message: Type.Optional(Type.String({ description: 'A ready-to-send text: the question and the link.' })),
        answer: Nullable(Type.String()),
        comment: Nullable(Type.String()),
        answered_at: Nullable(Type.String({ format: 'date-time' })),
      }),
    ),
  },
  { title: 'Callback', description: 'A one-shot callback URL and where it stands (docs/api.md §3.6).' },
);
export type Callback = Static<typeof CallbackSchema>;

export const CallbackResponseSchema = Type.Object({ callback: CallbackSchema }, { title: 'CallbackResponse' });
export const CallbackWaitResponseSchema = Type.Object(
  {
    callback: CallbackSchema,
    body: Type.Unknown({
      description:
        "The completing delivery's parsed body (a person's answer: { answer, comment, answered_at }), or null.",
    }),
    event: Type.Optional(Type.Unknown({ description: 'With include=event: the completing event, or null.' })),
  },
  { title: 'CallbackWaitResponse' },
);
export const CallbackListSchema = Type.Object({ callbacks: Type.Array(CallbackSchema) }, { title: 'CallbackList' });
