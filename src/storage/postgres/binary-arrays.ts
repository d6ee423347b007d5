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

/** An array's size in binary; a text element's byte length goes into `textBytes`. */
function sizeOf(type: PgType, values: readonly unknown[], textBytes: number[]): number {
  const { size } = ELEMENT[type];
  let bytes = HEADER_BYTES + (values.length > 0 ? DIMENSION_BYTES : 0) + 4 * values.length;
  for (const value of values) {
    if (value === null || value === undefined) continue;
    if (type !== 'text') bytes += size;
    else if (typeof value !== 'string') throw wrongValue(type, value);
    else {
      const length = Buffer.byteLength(value, 'utf8');
      textBytes.push(length);
      bytes += length;
    }
  }
  return bytes;
}

/** Writes the array at `at`, its text elements' lengths read from `textBytes` from `next` on. */
function write(out: Buffer, at: number, type: PgType, values: readonly unknown[], textBytes: number[], next: number) {
  const count = values.length;
  at = out.writeInt32BE(count > 0 ? 1 : 0, at);
  at = out.writeInt32BE(values.some((value) => value === null || value === undefined) ? 1 : 0, at);
  at = out.writeUInt32BE(ELEMENT[type].oid, at);
  if (count > 0) {
    at = out.writeInt32BE(count, at);
    at = out.writeInt32BE(1, at);
  }
  for (const value of values) {
    if (value === null || value === undefined) {
      at = out.writeInt32BE(-1, at);
    } else if (type === 'text') {
      const length = textBytes[next++];
      at = out.writeInt32BE(length, at);
      at += out.write(value as string, at, length, 'utf8');
    } else if (type === 'boolean') {
      if (typeof value !== 'boolean') throw wrongValue(type, value);
      at = out.writeInt32BE(1, at);
      at = out.writeUInt8(value ? 1 : 0, at);
    } else {
      if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw wrongValue(type, value);
      at = out.writeInt32BE(ELEMENT[type].size, at);
      if (type === 'integer') at = out.writeInt32BE(value, at);
      else {
        // Two's complement in two halves: the high word by floor division, the low by ToUint32.
        at = out.writeInt32BE(Math.floor(value / TWO_TO_32), at);
        at = out.writeUInt32BE(value >>> 0, at);
      }
    }
  }
  return next;
}

/**
 * Each of `columns` (null for NULL) as the binary form of its `types[i][]`, all in one
 * allocation: a batch's arrays are one buffer for the garbage collector, not one each.
 * It throws on a value of another type.
 */
export function binaryArrays(types: readonly PgType[], columns: ReadonlyArray<readonly unknown[]>): Buffer[] {
  const textBytes: number[] = [];
  const sizes = columns.map((values, i) => sizeOf(types[i], values, textBytes));
  const out = Buffer.allocUnsafe(sizes.reduce((sum, size) => sum + size, 0));
  const arrays: Buffer[] = [];
  let at = 0;
  let next = 0;
  for (let i = 0; i < columns.length; i++) {
    next = write(out, at, types[i], columns[i], textBytes, next);
    arrays.push(out.subarray(at, at + sizes[i]));
    at += sizes[i];
  }
  return arrays;
}
