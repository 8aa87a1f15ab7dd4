import { JsonText } from '../json/lossless-json';

export interface Page<T> {
  items: T[];
  /** Set when more items follow the last one of this page. */
  hasMore: boolean;
}

/** A page and its items as the answer's JSON array, written once while it was measured. */
export interface JsonPage<T> extends Page<T> {
  json: JsonText;
}

/**
 * Fills a page of at most `limit` items whose JSON array stays within `maxBytes`, and always
 * takes the first item, however large, so that paging moves on. Each item is written to JSON
 * once, by `jsonOf`: its text is both what the bound counts and what the answer sends.
 */
export class PageFiller<T> {
  readonly items: T[] = [];
  private readonly texts: string[] = [];
  private bytes = 2; // []

  constructor(
    private readonly limit: number,
    private readonly maxBytes: number,
    private readonly jsonOf: (item: T) => string,
  ) {}

  /** Takes the item when the page has room for it; false, taking nothing, once it is full. */
  offer(item: T): boolean {
    if (this.items.length === this.limit) return false;
    const text = this.jsonOf(item);
    const size =
      Buffer.byteLength(text, 'utf8') + (this.items.length > 0 ? 1 : 0);
    if (this.items.length > 0 && this.bytes + size > this.maxBytes) {
      return false;
    }
    this.bytes += size;
    this.items.push(item);
    this.texts.push(text);
    return true;
  }

  /** The page as filled, with `hasMore` as the caller found it. */
  done(hasMore: boolean): JsonPage<T> {
    return {
      items: this.items,
      hasMore,
      json: new JsonText(`[${this.texts.join(',')}]`),
    };
  }
}
