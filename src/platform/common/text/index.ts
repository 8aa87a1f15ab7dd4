/** Checks of text a client sends. */
export { firstUnprintable } from './unprintable';
