import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ERROR_CODES, isSandboxError, SANDBOX_ERROR_CODES, SandboxError } from '../../src/errors.js';

describe('SandboxError', () => {
  test('toJSON is { error, code, ...data }', () => {
    const e = new SandboxError('IMAGE_NOT_FOUND', 'Image x:1 was not found.', { data: { image: 'x:1', tried: ['a', 'b'] } });
    expect(e.toJSON()).toEqual({ error: 'Image x:1 was not found.', code: 'IMAGE_NOT_FOUND', image: 'x:1', tried: ['a', 'b'] });
    expect(JSON.parse(JSON.stringify(e))).toEqual({
      error: 'Image x:1 was not found.',
      code: 'IMAGE_NOT_FOUND',
      image: 'x:1',
      tried: ['a', 'b'],
    });
    expect(new SandboxError('ABORTED', 'stop').toJSON()).toEqual({ error: 'stop', code: 'ABORTED' });
  });

  test('is an Error with name, code, frozen data and cause', () => {
    const cause = new Error('root');
    const e = new SandboxError('ENGINE_ERROR', 'boom', { cause, data: { status: 500 } });
    expect(e).toBeInstanceOf(Error);
    expect(e.name).toBe('SandboxError');
    expect(e.code).toBe('ENGINE_ERROR');
    expect(e.cause).toBe(cause);
    expect(Object.isFrozen(e.data)).toBe(true);
    expect(isSandboxError(e)).toBe(true);
    expect(isSandboxError(new Error('x'))).toBe(false);
  });

  test('the code set is closed and includes the documented codes', () => {
    expect([...SANDBOX_ERROR_CODES].sort()).toEqual(
      [
        'ABORTED',
        'CONTAINER_NOT_FOUND',
        'CONTAINER_START_FAILED',
        'ENGINE_ERROR',
        'ENGINE_UNAVAILABLE',
        'FILE_OPERATION_FAILED',
        'IMAGE_NOT_ALLOWED',
        'IMAGE_NOT_FOUND',
        'IMAGE_PULL_FAILED',
        'INTERNAL_ERROR',
        'INVALID_ARGUMENT',
        'INVALID_CONFIG',
        'POLICY_VIOLATION',
        'USER_DECLINED',
      ].sort(),
    );
  });
});

test('every code the package can answer with is in the closed set, with a line of doc that says what data holds', () => {
  for (const [code, doc] of Object.entries(ERROR_CODES)) {
    expect(doc).toMatch(/data: /);
    expect(SANDBOX_ERROR_CODES).toContain(code);
  }
  // Every code literal in src/ is one of them.
  const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src');
  const files = (function walk(d: string): string[] {
    return readdirSync(d, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(join(d, e.name)) : e.name.endsWith('.ts') ? [join(d, e.name)] : [],
    );
  })(root);
  const used = new Set(
    files.flatMap((f) => [...readFileSync(f, 'utf8').matchAll(/(?:SandboxError\(|code: )'([A-Z_]+)'/g)].map((m) => m[1]!)),
  );
  for (const code of used) expect(SANDBOX_ERROR_CODES).toContain(code);
});
