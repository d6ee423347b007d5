// Twilio's own request-signing code, from its webhooks module alone: the package's index
// brings the types of every Twilio API (about 200,000 lines) into each program that
// type-checks or lints the tests.
export * as twilio from 'twilio/lib/webhooks/webhooks.js';
