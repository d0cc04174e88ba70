import { BaseConfigSchema, commaList } from './config';

describe('BaseConfigSchema: the Postgres pool', () => {
  it('keeps one connection while idle and closes the others after 60 s by default', () => {
    const config = BaseConfigSchema.parse({});
    expect(config).toMatchObject({ DATABASE_POOL_SIZE: 5, DATABASE_POOL_MIN: 1, DATABASE_POOL_IDLE_MS: 60_000 });
  });

  it('reads them from the environment and refuses what is not a count', () => {
    expect(BaseConfigSchema.parse({ DATABASE_POOL_MIN: '0', DATABASE_POOL_IDLE_MS: '0' })).toMatchObject({
      DATABASE_POOL_MIN: 0,
      DATABASE_POOL_IDLE_MS: 0,
    });
    for (const bad of [{ DATABASE_POOL_MIN: '-1' }, { DATABASE_POOL_MIN: '51' }, { DATABASE_POOL_IDLE_MS: 'soon' }])
      expect(BaseConfigSchema.safeParse(bad).success).toBe(false);
  });
});

describe('commaList', () => {
  it('reads a comma-separated setting: entries trimmed, empty ones dropped, unset empty', () => {
    const list = commaList();
    expect(list.parse(' a.example , 10.0.0.0/8,,  ')).toEqual(['a.example', '10.0.0.0/8']);
    expect(list.parse(undefined)).toEqual([]);
    expect(list.parse(',')).toEqual([]);
  });
});
