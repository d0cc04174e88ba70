import fc from 'fast-check';
import { DEFAULT_VISION_LIMITS, resolveLlmClients, VISION_LIMIT_BOUNDS } from './llm-client-config';

const base = { name: 'c', baseUrl: 'http://127.0.0.1:1/v1', model: 'm' };
const one = (vision: unknown) => resolveLlmClients([{ ...base, vision }], {})[0].vision;

describe('a client’s vision', () => {
  it('is off unless configured; true gives the defaults; an object overrides them (camelCase or snake_case)', () => {
    expect(resolveLlmClients([base], {})[0].vision).toBeNull();
    expect(one(false)).toBeNull();
    expect(one(true)).toEqual({ maxSide: 1568, maxBytes: 524_288, maxImages: 8 });
    expect(one({ maxSide: 1024 })).toEqual({ ...DEFAULT_VISION_LIMITS, maxSide: 1024 });
    expect(one({ max_images: 2, max_bytes: 100_000 })).toEqual({ maxSide: 1568, maxBytes: 100_000, maxImages: 2 });
  });

  it('refuses unknown keys and any limit outside its bounds, naming the setting', () => {
    expect(() => one('yes')).toThrow(/\(c\)\.vision: expected true, false or an object/);
    expect(() => one({ maxPixels: 5 })).toThrow(/\(c\)\.vision\.maxPixels: unknown setting/);
    fc.assert(
      fc.property(
        fc.constantFrom(...(Object.keys(VISION_LIMIT_BOUNDS) as Array<keyof typeof VISION_LIMIT_BOUNDS>)),
        fc.oneof(fc.integer(), fc.double(), fc.string()),
        (key, value) => {
          const { min, max } = VISION_LIMIT_BOUNDS[key];
          const valid = Number.isInteger(value) && (value as number) >= min && (value as number) <= max;
          if (valid) expect(one({ [key]: value })?.[key]).toBe(value);
          else
            expect(() => one({ [key]: value })).toThrow(`(c).vision.${key}: expected an integer from ${min} to ${max}`);
        },
      ),
      { seed: 40, numRuns: 200 },
    );
  });
});
