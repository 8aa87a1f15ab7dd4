export interface Page<T> {
  items: T[];
  /** Set when more items follow the last one of this page. */
  hasMore: boolean;
}

/** Printable ASCII but `"` and `\\`: one byte each in JSON, as they are. */
const VERBATIM_IN_JSON = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** The bytes of a string as a JSON string in UTF-8, escapes and quotes included. */
export function jsonStringBytes(text: string): number {
  // most names and tags: counted without building the JSON text (a page counts 200 strings)
  if (VERBATIM_IN_JSON.test(text)) return text.length + 2;
  return Buffer.byteLength(JSON.stringify(text));
}

/**
 * Fills a page of at most `limit` items whose JSON array stays within `maxBytes`, and always
 * takes the first item, however large, so that paging moves on.
 */
export class PageFiller<T> {
  readonly items: T[] = [];
  private bytes = 2; // []

  constructor(
    private readonly limit: number,
    private readonly maxBytes: number,
    private readonly jsonBytes: (item: T) => number,
  ) {}

  /** Takes the item when the page has room for it; false, taking nothing, once it is full. */
  offer(item: T): boolean {
    if (this.items.length === this.limit) return false;
    const size = this.jsonBytes(item) + (this.items.length > 0 ? 1 : 0);
    if (this.items.length > 0 && this.bytes + size > this.maxBytes) {
      return false;
    }
    this.bytes += size;
    this.items.push(item);
    return true;
  }
}
