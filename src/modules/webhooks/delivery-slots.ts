/**
 * The most attempts one lane may have in flight when `withWork` lanes have work: the slots
 * that are not spare, divided among them (docs/decisions.md, "Webhooks").
 */
export function fairShare(slots: number, withWork: number): number {
  return Math.max(
    1,
    Math.ceil((slots - spareSlots(slots)) / Math.max(1, withWork)),
  );
}

/**
 * Slots kept free for the first attempt of a quick receiver with none in flight: an eighth of
 * the slots, one at least. A quick receiver waits for none unless more receivers than this
 * turned slow or unresponsive within one WEBHOOKS_TIMEOUT.
 */
export function spareSlots(slots: number): number {
  return Math.max(1, Math.floor(slots / 8));
}
