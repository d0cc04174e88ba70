import type { NatsBus } from './bus';

/**
 * The bus as services take it: the `NatsBus` that `MessagingModule` provides, under a token of its own that loads
 * no NATS client. A class's constructor metadata names its parameters' classes at run time, so a service that took
 * the NATS class would load the client into every unit spec that imports it; taking `Bus`, it loads this file only.
 * The type is the NatsBus's, whole.
 */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging -- abstract: never made, only named
export abstract class Bus {}
// eslint-disable-next-line @typescript-eslint/no-empty-object-type, @typescript-eslint/no-unsafe-declaration-merging -- the token class and the NatsBus's type are one name
export interface Bus extends NatsBus {}
