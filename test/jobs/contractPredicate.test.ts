import { describe, expect, it } from 'vitest';
import { parsePredicate, PredicateError, predicateProblem } from '../../src/config/predicate.ts';
import { bindPredicate } from '../../src/jobs/contracts/contractPredicate.ts';

// The predicate over rows given as the exact text the contract reads (as CSV writes it); the
// column types as the service's column_types spells them.
const types = new Map([
  ['amount', 'decimal(18, 4)'],
  ['n', 'bigint'],
  ['x', 'double'],
  ['status', 'varchar'],
  ['day', 'date'],
  ['ts', 'timestamp'],
  ['ok', 'boolean'],
  ['Mixed Case', 'integer'],
]);

function holds(predicate: string, row: Record<string, string | null>): boolean | null {
  return bindPredicate(parsePredicate(predicate), types)((c) => row[c] ?? null);
}

function bindError(predicate: string): string {
  try {
    bindPredicate(parsePredicate(predicate), types);
  } catch (error) {
    expect(error).toBeInstanceOf(PredicateError);
    return (error as Error).message;
  }
  throw new Error(`expected ${predicate} to be refused`);
}

describe('contract predicates', () => {
  it('evaluates comparisons, arithmetic, in, between, and/or/not, case-insensitive keywords, quoted columns', () => {
    expect(holds('amount >= 0 AND amount < 1e9', { amount: '12.5000' })).toBe(true);
    expect(holds('amount >= 0 and amount < 1e9', { amount: '-0.0001' })).toBe(false);
    expect(holds('n % 2 = 0 or -n > 3', { n: '-4' })).toBe(true);
    expect(holds('n * 2 + 1 = 7 and (n - 1) / 2 = 1', { n: '3' })).toBe(true);
    expect(holds("status in ('paid', 'it''s')", { status: "it's" })).toBe(true);
    expect(holds("status not in ('paid')", { status: 'paid' })).toBe(false);
    expect(holds('n between 1 and 3 and n not between 2 and 2', { n: '3' })).toBe(true);
    expect(holds('not ok', { ok: 'false' })).toBe(true);
    expect(holds('"Mixed Case" <> 1', { 'Mixed Case': '2' })).toBe(true);
    expect(holds("day between '2026-01-01' and '2026-01-31'", { day: '2026-01-31' })).toBe(true);
    expect(holds("ts > '2026-01-01 00:00:00'", { ts: '2026-01-01 00:00:00.000001' })).toBe(true);
    expect(holds("status < 'b'", { status: 'a' })).toBe(true);
  });

  it("follows SQL's three-valued logic: NULL is unknown, and only false breaks the predicate", () => {
    expect(holds('amount > 0', { amount: null })).toBeNull();
    expect(holds('amount > 0 and n > 0', { amount: null, n: '-1' })).toBe(false);
    expect(holds('amount > 0 or n > 0', { amount: null, n: '1' })).toBe(true);
    expect(holds('not (amount > 0)', { amount: null })).toBeNull();
    expect(holds("status in ('a', 'b')", { status: null })).toBeNull();
    expect(holds("status not in ('a')", { status: null })).toBeNull();
    // A NULL in the list makes "not in" never true: refused as the mistake it is.
    expect(bindError("status not in ('a', null)")).toBe('character 8 of "status not in (\'a\', null)": a comparison with null is never true: write "is null" or "is not null"');
    expect(holds('amount is null', { amount: null })).toBe(true);
    expect(holds('amount is not null and amount > 0', { amount: null })).toBe(false);
    // As the engine does: a division by zero is NULL.
    expect(holds('n / 0 > 1', { n: '5' })).toBeNull();
  });

  it('says where a predicate does not parse, by character', () => {
    expect(predicateProblem('amount >= 0')).toBeUndefined();
    expect(predicateProblem('amount >= 0 an')).toBe('character 13 of "amount >= 0 an": expected "and", "or", an operator or the end of the predicate, got "an"');
    expect(predicateProblem("status = 'x")).toBe('character 10 of "status = \'x": the \'text\' is not closed (double a \' inside it)');
    expect(predicateProblem('amount ; drop table t')).toBe('character 8 of "amount ; drop table t": unexpected ";"');
    expect(predicateProblem('status not like \'a%\'')).toBe('character 12 of "status not like \'a%\'": expected "in" or "between" after "not", got "like"');
    expect(predicateProblem('lower(status) = \'a\'')).toBe('character 6 of "lower(status) = \'a\'": expected "and", "or", an operator or the end of the predicate, got "("');
    expect(predicateProblem('and > 1')).toBe('character 1 of "and > 1": expected a column, a number, a \'text\', true, false, null or "(", got "and"');
  });

  it("refuses, before any row, what does not fit the columns' types", () => {
    expect(bindError('nope > 1')).toBe('character 1 of "nope > 1": no column nope in the result (columns: amount, n, x, status, day, ts, ok, Mixed Case)');
    expect(bindError("amount > '5'")).toBe('character 10 of "amount > \'5\'": a number does not compare with text (a number is written without quotes)');
    expect(bindError('amount = null')).toBe('character 8 of "amount = null": a comparison with null is never true: write "is null" or "is not null"');
    expect(bindError("day > '2026-13-01'")).toMatch(/^character 7 of "day > '2026-13-01'": expected a date/);
    expect(bindError('day > ts')).toBe('character 7 of "day > ts": a date compares with a date column or a \'2024-01-31\' literal, not a timestamp');
    expect(bindError("status + 1 > 2")).toBe('character 1 of "status + 1 > 2": "+" does arithmetic on numbers, not text');
    expect(bindError('amount and ok')).toBe('character 1 of "amount and ok": "and" needs a true/false operand, not a number (compare it: = <> < > ...)');
    expect(bindError('amount + 1')).toBe('character 8 of "amount + 1": a predicate is true or false for a row; this is a number (compare it: = <> < > ...)');
  });
});
