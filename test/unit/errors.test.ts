import { readdirSync, readFileSync } from 'node:fs';
import ts from 'typescript';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ERROR_CODES, FILE_OPERATION_REASONS, isSandboxError, SANDBOX_ERROR_CODES, SandboxError } from '../../src/errors.js';

describe('SandboxError', () => {
  test('toJSON is { error, code, ...data }', () => {
    const e = new SandboxError('IMAGE_NOT_ALLOWED', 'Image x:1 is not allowed.', { data: { image: 'x:1', allowed: ['a', 'b'] } });
    expect(e.toJSON()).toEqual({ error: 'Image x:1 is not allowed.', code: 'IMAGE_NOT_ALLOWED', image: 'x:1', allowed: ['a', 'b'] });
    expect(JSON.parse(JSON.stringify(e))).toEqual({
      error: 'Image x:1 is not allowed.',
      code: 'IMAGE_NOT_ALLOWED',
      image: 'x:1',
      allowed: ['a', 'b'],
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

test('every code the package can answer with is in the closed set, with a sentence that says what it means', () => {
  for (const [code, doc] of Object.entries(ERROR_CODES)) {
    expect(doc).toMatch(/^[A-Z].{20,}\.$/);
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

test("each code's data is a type: wrong data does not compile (npm run typecheck fails if one of these does)", () => {
  const made = [
    // @ts-expect-error -- a reason not in FILE_OPERATION_REASONS
    new SandboxError('FILE_OPERATION_FAILED', 'x', { data: { path: 'a', reason: 'timd out' } }),
    // @ts-expect-error -- a file's failure without its path
    new SandboxError('FILE_OPERATION_FAILED', 'x', { data: { reason: 'timed out' } }),
    // @ts-expect-error -- data it requires, not given
    new SandboxError('CONTAINER_NOT_FOUND', 'x'),
    // @ts-expect-error -- a field of another code
    new SandboxError('IMAGE_NOT_FOUND', 'x', { data: { image: 'a', rule: 'noPrivileged' } }),
    new SandboxError('FILE_OPERATION_FAILED', 'x', { data: { path: 'a', reason: 'timed out' } }),
  ];
  // At run time the data is whatever was given: the type is the check.
  expect(made.map((e) => e.code)).toEqual([
    'FILE_OPERATION_FAILED',
    'FILE_OPERATION_FAILED',
    'CONTAINER_NOT_FOUND',
    'IMAGE_NOT_FOUND',
    'FILE_OPERATION_FAILED',
  ]);
  expect(FILE_OPERATION_REASONS).toEqual(['not found', 'wrong type', 'cannot write', 'too large', 'timed out', 'failed']);
});

test('isSandboxError with a code narrows the data to that code', () => {
  const e: unknown = new SandboxError('FILE_OPERATION_FAILED', 'x', { data: { path: 'a', reason: 'too large' } });
  expect(isSandboxError(e, 'FILE_OPERATION_FAILED') && e.data.reason).toBe('too large');
  expect(isSandboxError(e, 'POLICY_VIOLATION')).toBe(false);
});

test("docs/actions.md lists each code's data as ErrorData types it, and the reasons of FILE_OPERATION_FAILED", () => {
  const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
  const file = join(root, 'src', 'errors.ts');
  // The compiler's own reading of the type, not a second copy of it.
  const program = ts.createProgram([file], { strict: true, noEmit: true, skipLibCheck: true, types: [] });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(file)!;
  const errorData = source.statements.find(
    (s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === 'ErrorData',
  )!;
  const typed = Object.fromEntries(
    errorData.members.map((m) => [
      (m.name as ts.Identifier).text,
      checker
        .getPropertiesOfType(checker.getTypeAtLocation(m))
        .filter((p) => p.name !== 'logPath')
        .map((p) => `${p.name}${p.flags & ts.SymbolFlags.Optional ? '?' : ''}`),
    ]),
  );
  expect(Object.keys(typed)).toEqual(Object.keys(ERROR_CODES));

  const page = readFileSync(join(root, 'docs', 'actions.md'), 'utf8');
  const list = page.slice(page.indexOf('<!-- error-data:'));
  const documented = Object.fromEntries(
    [...list.matchAll(/^- `([A-Z_]+)`: (.*)$/gm)].map((m) => [
      m[1]!,
      // The fields are the quoted names outside parentheses.
      [...m[2]!.replace(/\([^)]*\)/g, '').matchAll(/`([A-Za-z]+\??)`/g)].map((f) => f[1]!),
    ]),
  );
  expect(documented).toEqual(typed);
  const reasons = /`FILE_OPERATION_FAILED`: .*\(one of ([^)]*)\)/.exec(list)![1]!;
  expect([...reasons.matchAll(/`([^`]+)`/g)].map((m) => m[1])).toEqual([...FILE_OPERATION_REASONS]);
});
