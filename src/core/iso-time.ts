// Timestamps as the API writes them (ISO 8601, UTC, milliseconds), one or two per event of a
// page. Events read together were mostly created within the same second, so the part up to
// the second is kept from the last call and only the milliseconds are written each time.

let cachedSecond = Number.NaN;
/** "YYYY-MM-DDTHH:mm:ss." of cachedSecond, or '' when that second has no 24-character form. */
let cachedPrefix = '';

/** The same string as new Date(ms).toISOString(), for an integer number of milliseconds. */
export function isoTime(ms: number): string {
  const second = Math.floor(ms / 1000);
  if (second !== cachedSecond) {
    const full = new Date(ms).toISOString();
    cachedSecond = second;
    // Years before 0 or after 9999 take a longer, signed form: those are not cached.
    cachedPrefix = full.length === 24 ? full.slice(0, 20) : '';
    return full;
  }
  if (cachedPrefix === '') return new Date(ms).toISOString();
  const milli = ms - second * 1000;
  return `${cachedPrefix}${milli < 10 ? '00' : milli < 100 ? '0' : ''}${milli}Z`;
}
