// What the transports may name of the storage layer: its record shapes, the pure token
// bucket, and ownBytes for what crosses to a worker thread. Transports reach storage only
// through the core (.dependency-cruiser.cjs).
export type { AddressRecord, EmailPart, Storage } from '../storage/storage.js';
export { RAW_EMAIL_PART } from '../storage/storage.js';
export { ownBytes } from '../storage/own-bytes.js';
export { takeFromBucket, type BucketState } from '../storage/token-bucket.js';
