/**
 * A small seeded generator (mulberry32) for the simulations: the same seed, the same
 * schedule, so that a failing seed replays exactly.
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A whole number from `low` to `high`, both included, drawn from `random`. */
export function integersBetween(
  random: () => number,
): (low: number, high: number) => number {
  return (low, high) => low + Math.floor(random() * (high - low + 1));
}
