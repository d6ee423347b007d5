// One-dimensional PostgreSQL arrays in the database's binary form, for parameters.
// node-postgres sends a Buffer as a binary parameter; any other array it writes as an array
// literal, quoting and escaping every element in JavaScript for the database to parse back.
// The batch statement's columns (events-append.ts) carry every event's JSON, so its arrays
// go in binary: each element is its length and its bytes (BENCHMARKS.md, "binary arrays").
// The layout is PostgreSQL's array_send: dimensions, a null flag, the element type's OID,
// each dimension's length and lower bound, then each element (-1 for NULL).
import type { Column } from '../tables.js';

type PgType = Column<unknown>['pgType'];

/** Each element type's OID (pg_type) and its fixed size in binary, 0 for text. */
const ELEMENT: Record<PgType, { oid: number; size: number }> = {
  text: { oid: 25, size: 0 },
  bigint: { oid: 20, size: 8 },
  integer: { oid: 23, size: 4 },
  boolean: { oid: 16, size: 1 },
};
const HEADER_BYTES = 12;
const DIMENSION_BYTES = 8;
const TWO_TO_32 = 2 ** 32;

function wrongValue(type: PgType, value: unknown): TypeError {
  return new TypeError(
    `a ${type}[] element must be ${type === 'text' ? 'a string' : `a ${type}`}, got ${typeof value}`,
  );
}

/** `values` (null for NULL) as the binary form of `type[]`; it throws on a value of another type. */
export function binaryArray(type: PgType, values: readonly unknown[]): Buffer {
  const { oid, size } = ELEMENT[type];
  const count = values.length;
  let bytes = HEADER_BYTES + (count > 0 ? DIMENSION_BYTES : 0) + 4 * count;
  let hasNull = false;
  const textBytes = type === 'text' ? new Array<number>(count) : undefined;
  for (let i = 0; i < count; i++) {
    const value = values[i];
    if (value === null || value === undefined) hasNull = true;
    else if (textBytes) {
      if (typeof value !== 'string') throw wrongValue(type, value);
      textBytes[i] = Buffer.byteLength(value, 'utf8');
      bytes += textBytes[i];
    } else bytes += size;
  }
  const out = Buffer.allocUnsafe(bytes);
  let at = out.writeInt32BE(count > 0 ? 1 : 0, 0);
  at = out.writeInt32BE(hasNull ? 1 : 0, at);
  at = out.writeUInt32BE(oid, at);
  if (count > 0) {
    at = out.writeInt32BE(count, at);
    at = out.writeInt32BE(1, at);
  }
  for (let i = 0; i < count; i++) {
    const value = values[i];
    if (value === null || value === undefined) {
      at = out.writeInt32BE(-1, at);
    } else if (textBytes) {
      at = out.writeInt32BE(textBytes[i], at);
      at += out.write(value as string, at, textBytes[i], 'utf8');
    } else if (type === 'boolean') {
      if (typeof value !== 'boolean') throw wrongValue(type, value);
      at = out.writeInt32BE(1, at);
      at = out.writeUInt8(value ? 1 : 0, at);
    } else {
      if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw wrongValue(type, value);
      at = out.writeInt32BE(size, at);
      if (type === 'integer') at = out.writeInt32BE(value, at);
      else {
        // Two's complement in two halves: the high word by floor division, the low by ToUint32.
        at = out.writeInt32BE(Math.floor(value / TWO_TO_32), at);
        at = out.writeUInt32BE(value >>> 0, at);
      }
    }
  }
  return out;
}
