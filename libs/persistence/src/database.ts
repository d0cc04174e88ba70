import type { DataSource } from 'typeorm';

/**
 * The app's database as its repositories and services take it: the TypeORM DataSource that `DatabaseModule`
 * provides, under a token of its own that loads no TypeORM. A class's constructor metadata names its parameters'
 * classes at run time, so a repository that took `DataSource` would load TypeORM into every unit spec that
 * imports it; taking `Database`, it loads this file only. The type is the DataSource's, whole.
 */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging -- abstract: never made, only named
export abstract class Database {}
// eslint-disable-next-line @typescript-eslint/no-empty-object-type, @typescript-eslint/no-unsafe-declaration-merging -- the token class and the DataSource's type are one name
export interface Database extends DataSource {}
