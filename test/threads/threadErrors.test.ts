import { describe, expect, it } from 'vitest';
import { NotFoundError } from '../../src/client/errors.ts';
import { ConfigError } from '../../src/errors.ts';
import { SettingsError } from '../../src/service/settings.ts';
import { policyOf } from '../../src/jobs/run/errorPolicy.ts';
import { FormatError } from '../../src/kit/index.ts';
import { reviveError, sendError } from '../../src/threads/threadErrors.ts';
import { ValueDecodeError } from '../../src/types/errors.ts';

/** What a worker thread's error becomes on the other side: sent, cloned as postMessage would, revived. */
const across = (error: unknown) => reviveError(structuredClone(sendError(error)));

describe('errors across threads', () => {
  it('typed errors keep their class, code, fields, message and row of the error table', () => {
    const decode = new ValueDecodeError({ column: 'amount', type: 'decimal(18,4)', rowOffset: 1234, path: '', value: 'x', reason: 'is not a number' });
    const back = across(decode);
    expect(back).toBeInstanceOf(ValueDecodeError);
    expect(back).toMatchObject({ code: decode.code, column: 'amount', rowOffset: 1234, message: decode.message, name: 'ValueDecodeError' });
    expect(policyOf(back)).toEqual(policyOf(decode));

    const config = new ConfigError('output', [{ path: 'format_options.compression', message: 'expected zstd', value: 'lz5' }]);
    const revived = across(config) as ConfigError;
    expect(revived).toBeInstanceOf(ConfigError);
    expect(revived.issues).toEqual(config.issues);
    expect(policyOf(revived).exit).toBe(2);

    const notFound = across(new NotFoundError('execution 01X not found', { method: 'getResults', status: 404 }));
    expect(notFound).toBeInstanceOf(NotFoundError);
    expect((notFound as NotFoundError).status).toBe(404);
  });

  it('the cause travels too; an error of no known class arrives as a plain Error with its message', () => {
    const wrapped = across(new FormatError('parquet', 'parquet-wasm refused the row group', new RangeError('offset out of bounds')));
    expect(wrapped).toBeInstanceOf(FormatError);
    expect((wrapped.cause as Error).message).toBe('offset out of bounds');
    const plain = across(new TypeError('x is not a function'));
    expect(plain).toBeInstanceOf(Error);
    expect(plain.message).toBe('x is not a function');
    expect(across('a string thrown').message).toBe('a string thrown');
  });

  it("a class of the receiver's own (the service's SettingsError) is revived as that class when the receiver names it, its cause too", () => {
    const settings = new SettingsError('settings.yaml: not valid YAML', { cause: new SettingsError('line 3') });
    const sent = structuredClone(sendError(settings));
    const named = reviveError(sent, [SettingsError]);
    expect(named).toBeInstanceOf(SettingsError);
    expect(named).toBeInstanceOf(ConfigError);
    expect(named).toMatchObject({ code: 'SETTINGS_INVALID', message: 'settings.yaml: not valid YAML' });
    expect(named.cause).toBeInstanceOf(SettingsError);
    // Not named, it is of no class the rest of sluice knows: a plain Error with the message.
    const unnamed = reviveError(sent);
    expect(unnamed).not.toBeInstanceOf(SettingsError);
    expect(unnamed.message).toBe('settings.yaml: not valid YAML');
  });
});
