/**
 * What a name a module declares (a job, an event handler) may be: lowercase words joined by
 * dots or dashes, `care.plant-deleted`, at most 64 characters. It is a row's key and a
 * metric's label.
 */
export const DECLARED_NAME_FORMAT = /^[a-z][a-z0-9]*([.-][a-z0-9]+)*$/;
export const MAX_DECLARED_NAME = 64;

export function isDeclaredName(name: string): boolean {
  return name.length <= MAX_DECLARED_NAME && DECLARED_NAME_FORMAT.test(name);
}
