// DuneSQL functions SQL cannot compute, registered as native (JavaScript) scalar functions on
// the instance that runs users' SQL: keccak (DuckDB has no Keccak-256), the varbinary ->
// 256-bit integer conversions, and the arithmetic of uint256 / int256 (stored as BIGNUM in a
// one-member union, customTypes.ts), exact over the whole range with overflow an error as in
// the real service. DuckDB's BIGNUM adds exactly but multiplies and divides in DOUBLE, and a
// union has no operators: the operators below are overloads DuckDB adds to `+`, `-`, `*`, `/`,
// `%` for these types, so `value * 2` and `a - b` bind to them.
import {
  BIGINT,
  BIGNUM,
  BLOB,
  DOUBLE,
  DuckDBBlobValue,
  DuckDBScalarFunction,
  UNION,
  unionValue,
  type DuckDBConnection,
  type DuckDBType,
  type DuckDBUnionValue,
  type DuckDBValue,
} from '@duckdb/node-api';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { INT256_MAX, INT256_MIN, UINT256_MAX } from '../customTypes.ts';

const UINT256 = UNION({ uint256: BIGNUM });
const INT256 = UNION({ int256: BIGNUM });

interface Big {
  tag: 'uint256' | 'int256';
  type: DuckDBType;
  min: bigint;
  max: bigint;
}
const BIGS: readonly Big[] = [
  { tag: 'uint256', type: UINT256, min: 0n, max: UINT256_MAX },
  { tag: 'int256', type: INT256, min: INT256_MIN, max: INT256_MAX },
];

/** Names of the native functions (for the sandbox's list of functions). */
export const NATIVE_FUNCTION_NAMES: readonly string[] = ['keccak', 'varbinary_to_uint256', 'varbinary_to_int256'];

type Row = (args: DuckDBValue[]) => DuckDBValue;

function scalar(name: string, parameterTypes: DuckDBType[], returnType: DuckDBType, row: Row): DuckDBScalarFunction {
  return DuckDBScalarFunction.create({
    name,
    parameterTypes,
    returnType,
    mainFunction: (info, input, output) => {
      const columns = parameterTypes.map((_, c) => input.getColumnVector(c));
      try {
        for (let i = 0; i < input.rowCount; i += 1) {
          const args = columns.map((v) => v.getItem(i));
          output.setItem(i, args.some((a) => a === null) ? null : row(args));
        }
        output.flush();
      } catch (err) {
        info.setError(err instanceof Error ? err.message : String(err));
      }
    },
  });
}

function bigOf(v: DuckDBValue): bigint {
  const inner = (v as DuckDBUnionValue).value;
  return typeof inner === 'bigint' ? inner : BigInt(String(inner));
}

function checked(big: Big, op: string, n: bigint): DuckDBUnionValue {
  if (n < big.min || n > big.max) throw new Error(`${big.tag} overflow: the result of ${op} is outside [${big.min}, ${big.max}]`);
  return unionValue(big.tag, n);
}

function bytesOf(v: DuckDBValue): Uint8Array {
  return (v as DuckDBBlobValue).bytes;
}

function toBigUnsigned(bytes: Uint8Array): bigint {
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  return n;
}

function operators(big: Big): DuckDBScalarFunction[] {
  const T = big.type;
  const divide = (a: bigint, b: bigint): bigint => {
    if (b === 0n) throw new Error('Division by zero');
    return a / b; // BigInt division truncates toward zero, as Trino's integer division
  };
  const modulo = (a: bigint, b: bigint): bigint => {
    if (b === 0n) throw new Error('Division by zero');
    return a % b;
  };
  const ops: [string, (a: bigint, b: bigint) => bigint][] = [
    ['+', (a, b) => a + b],
    ['-', (a, b) => a - b],
    ['*', (a, b) => a * b],
    ['/', divide],
    ['%', modulo],
  ];
  // `//` too: DuckDB binds Trino's integer `/` (integer_division) as `//`.
  ops.push(['//', divide]);
  const out = ops.map(([op, f]) => scalar(op, [T, T], T, ([a, b]) => checked(big, op, f(bigOf(a!), bigOf(b!)))));
  // No (bigint, uint256) overloads: DuckDB then finds `bigint / 2` ambiguous (the literal casts
  // to the union as cheaply as to a bigint), which breaks every integer expression.
  // With a fraction the result is a double, as Trino's uint256 / double.
  for (const [op, f] of [
    ['/', (a: number, b: number) => a / b],
    ['//', (a: number, b: number) => a / b],
    ['*', (a: number, b: number) => a * b],
    ['+', (a: number, b: number) => a + b],
    ['-', (a: number, b: number) => a - b],
  ] as const) {
    out.push(scalar(op, [T, DOUBLE], DOUBLE, ([a, b]) => f(Number(bigOf(a!)), b as number)));
    out.push(scalar(op, [DOUBLE, T], DOUBLE, ([a, b]) => f(a as number, Number(bigOf(b!)))));
  }
  return out;
}

function conversions(): DuckDBScalarFunction[] {
  const [u, s] = BIGS as [Big, Big];
  return [
    scalar('keccak', [BLOB], BLOB, ([b]) => new DuckDBBlobValue(keccak_256(bytesOf(b!)))),
    scalar('varbinary_to_uint256', [BLOB], UINT256, ([b]) => {
      const bytes = bytesOf(b!);
      if (bytes.length > 32) throw new Error(`varbinary_to_uint256: ${bytes.length} bytes, at most 32`);
      return unionValue(u.tag, toBigUnsigned(bytes));
    }),
    scalar('varbinary_to_int256', [BLOB], INT256, ([b]) => {
      const bytes = bytesOf(b!);
      if (bytes.length > 32) throw new Error(`varbinary_to_int256: ${bytes.length} bytes, at most 32`);
      const n = toBigUnsigned(bytes);
      const bits = BigInt(bytes.length * 8);
      const signed = bytes.length > 0 && (bytes[0]! & 0x80) !== 0 ? n - (1n << bits) : n;
      return unionValue(s.tag, signed);
    }),
  ];
}

/**
 * Varbinary overloads Trino has and DuckDB lacks (DuckDB's length and substr take text): added
 * to DuckDB's functions of those names, so `length(data)` and `substr(data, 5, 32)` work on
 * varbinary in both dialects. Positions count bytes from 1; a negative start counts from the end.
 */
function varbinaryOverloads(): DuckDBScalarFunction[] {
  const slice = (bytes: Uint8Array, start: bigint, length?: bigint): DuckDBBlobValue => {
    const n = bytes.length;
    const from = start > 0n ? Number(start) - 1 : start < 0n ? n + Number(start) : n;
    if (from < 0 || from >= n) return new DuckDBBlobValue(new Uint8Array(0));
    const end = length === undefined ? n : Math.min(n, from + Math.max(0, Number(length)));
    return new DuckDBBlobValue(bytes.slice(from, end));
  };
  const out = [scalar('length', [BLOB], BIGINT, ([b]) => BigInt(bytesOf(b!).length))];
  for (const name of ['substr', 'substring']) {
    out.push(scalar(name, [BLOB, BIGINT], BLOB, ([b, s]) => slice(bytesOf(b!), s as bigint)));
    out.push(scalar(name, [BLOB, BIGINT, BIGINT], BLOB, ([b, s, l]) => slice(bytesOf(b!), s as bigint, l as bigint)));
  }
  return out;
}

/** Registers the native functions through `conn` (they are visible to every connection of its instance). */
export function registerNativeFunctions(conn: DuckDBConnection): void {
  for (const f of [...conversions(), ...varbinaryOverloads(), ...BIGS.flatMap(operators)]) conn.registerScalarFunction(f);
}
