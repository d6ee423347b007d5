// The failures a storage engine reports upwards, in its own terms: the layers above decide
// what each becomes for a client (core/errors.ts fromStorage: 503 or 400). The messages are
// written for whoever made the request, so they are passed on as they are.

/** Every failure an engine classified (others are bugs, and reach the edge as themselves). */
export class StorageError extends Error {}

/** The database is away, stalled, overloaded or out of disk: nothing was written; retry shortly. */
export class StorageUnavailableError extends StorageError {
  constructor(message = 'Storage is unavailable; retry shortly.', options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StorageUnavailableError';
  }
}

/** A value the engine cannot store; the request that brought it must change. */
export class StorageInvalidValueError extends StorageError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StorageInvalidValueError';
  }
}
