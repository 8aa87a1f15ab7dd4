/** Pages of a list bounded in bytes as well as in items. */
export { PageFiller, type JsonPage, type Page } from './byte-bounded-page';
