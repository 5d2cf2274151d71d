/**
 * The end of an exhaustive `switch` over a union (a delivery form, a datapath mode): `default: return
 * assertNever(x, 'delivery form')`. The compiler refuses the call while a member is unhandled (`x` is then
 * not `never`), so a new member names every switch that must handle it; at run time it throws, never renders
 * a default. Pure, no cdk8s import.
 */
export function assertNever(x: never, what: string): never {
  throw new Error(`unhandled ${what}: ${JSON.stringify(x)}`);
}
