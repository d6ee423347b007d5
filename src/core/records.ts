// What the transports may name of the storage layer: its record shapes and the pure token
// bucket. Transports reach storage only through the core (.dependency-cruiser.cjs).
export type { AddressRecord, EmailPart, Storage } from '../storage/storage.js';
export { RAW_EMAIL_PART } from '../storage/storage.js';
export { takeFromBucket, type BucketState } from '../storage/token-bucket.js';
