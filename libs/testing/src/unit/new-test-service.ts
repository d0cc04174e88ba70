/**
 * A NestJS service built for a unit test, every constructor dependency a fake, without Nest's
 * container (the shape of immich's `newTestService`):
 *
 *     const { sut, mock } = newTestService(RulesService, [fake(RULES_MAX_AGE_MS, 1000)]);
 *     mock(RulesRepository).find.mockResolvedValue(null);
 *     await expect(sut.update('r1', patch)).rejects.toThrow('no such rule');
 *
 * A dependency whose type is a class (read from the constructor's `design:paramtypes`) gets an
 * automatic mock: each method of the class a `jest.fn()` returning `undefined`, fields left unset.
 * Anything else (an `@Inject(TOKEN)` value, an interface, a number) has no shape to copy: give it
 * with `fake(token, value)`, or the build fails naming the parameter. An `@Optional()` parameter
 * without a fake is left `undefined`, as Nest leaves it when nothing provides it. A `fake` for a
 * class replaces its automatic mock (`fake(Clock, { now: () => 0 })`): give only what the test
 * needs; `mock(Class)` returns it typed as the whole class. A class Nest does not build (no
 * `@Injectable()`, so no parameter types) is built with `new`, each class it takes an `automock`.
 * A port token whose methods are a type only (`Bus`, `Database`: an abstract class merged with its
 * adapter's type) has no methods to copy: its automatic mock is empty, so give the methods the test
 * drives with `fake(Bus, { publish: jest.fn() })`.
 */
import 'reflect-metadata';

// Nest's metadata keys (@nestjs/common/constants): the constructor's parameter types, the
// `@Inject()` tokens, the `@Optional()` indexes.
const PARAMTYPES = 'design:paramtypes';
const SELF_DECLARED_DEPS = 'self:paramtypes';
const OPTIONAL_DEPS = 'optional:paramtypes';

/** A class the service depends on, by its prototype (so abstract classes and private constructors do too). */
export type Class<T = unknown> = { readonly prototype: T; readonly name: string };
/** What Nest resolves a parameter by: its class or an `@Inject()` token. */
export type Token = Class | string | symbol;

/** `T` with each public method a Jest mock of its signature (it stands in wherever a `T` is taken). */
export type Mocked<T> = T & {
  [K in keyof T]: T[K] extends (...args: infer A) => infer R ? jest.Mock<R, A> & T[K] : T[K];
};

export interface Fake {
  readonly token: Token;
  readonly value: unknown;
}

/** The value a dependency resolves to in the test: for a class, any part of it. */
export function fake<T>(token: Class<T>, value: Partial<T>): Fake;
export function fake(token: string | symbol, value: unknown): Fake;
export function fake(token: Token, value: unknown): Fake {
  return { token, value };
}

export interface TestService<S> {
  /** The service under test. */
  sut: S;
  /** The fake or automatic mock given for `token`: a class's, typed as the class with mocked methods. */
  mock<T>(token: Class<T>): Mocked<T>;
  mock<T = unknown>(token: string | symbol): T;
}

/** An object with a `jest.fn()` for each method of `cls` and its ancestors. */
export function automock<T>(cls: Class<T>): Mocked<T> {
  const mock: Record<string, jest.Mock> = {};
  for (let proto: object | null = cls.prototype as object; proto && proto !== Object.prototype;) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      if (name === 'constructor' || name in mock) continue;
      const d = Object.getOwnPropertyDescriptor(proto, name);
      if (d && typeof d.value === 'function') mock[name] = jest.fn();
    }
    proto = Object.getPrototypeOf(proto) as object | null;
  }
  return mock as unknown as Mocked<T>;
}

function describeToken(token: unknown): string {
  if (typeof token === 'function') return token.name || 'an anonymous class';
  return String(token);
}

export function newTestService<S>(Service: new (...args: never[]) => S, fakes: readonly Fake[] = []): TestService<S> {
  const given = new Map<unknown, unknown>(fakes.map((f) => [f.token, f.value]));
  const types = Reflect.getMetadata(PARAMTYPES, Service) as unknown[] | undefined;
  if (types === undefined && Service.length > 0)
    throw new Error(
      `${Service.name} has no constructor metadata (not an @Injectable): build it with new, giving automock(Class) ` +
        `for each class it takes`,
    );
  const injected = (Reflect.getMetadata(SELF_DECLARED_DEPS, Service) as { index: number; param: unknown }[]) ?? [];
  const optional = new Set((Reflect.getMetadata(OPTIONAL_DEPS, Service) as number[] | undefined) ?? []);
  const byToken = new Map<unknown, unknown>();
  const args = (types ?? []).map((type, index) => {
    const token = injected.find((d) => d.index === index)?.param ?? type;
    if (byToken.has(token)) return byToken.get(token);
    let value: unknown;
    if (given.has(token)) value = given.get(token);
    else if (optional.has(index)) value = undefined;
    else if (typeof token === 'function' && token !== Object && token.prototype) value = automock(token as Class);
    else
      throw new Error(
        `${Service.name}'s constructor parameter ${index} (${describeToken(token)}) has no shape to mock: ` +
          `pass fake(${describeToken(token)}, value) to newTestService`,
      );
    byToken.set(token, value);
    return value;
  });
  for (const token of given.keys())
    if (!byToken.has(token))
      throw new Error(`${Service.name} does not take ${describeToken(token)}: a fake for it would never be used`);
  const sut = new Service(...(args as never[]));
  return {
    sut,
    mock: (token: Token) => {
      if (!byToken.has(token)) throw new Error(`${Service.name} does not take ${describeToken(token)}`);
      return byToken.get(token);
    },
  };
}
