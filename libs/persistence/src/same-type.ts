/**
 * `true` when A and B are the same type: each assignable to the other, and neither side an `any` that would make
 * both directions hold. With `AssertTrue`, a compile-time check that a union written elsewhere (a zod enum, a
 * domain type of the loop) holds exactly the literals a CHECK constraint gave the generated row type:
 *
 *   type _Checked = AssertTrue<SameType<MessageStatus, ChatHistoryRow['status']>>;
 */
export type SameType<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

/** Compiles only for `true`: the line naming a `SameType` that is false fails `tsc`. */
export type AssertTrue<T extends true> = T;
