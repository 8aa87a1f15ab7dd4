/** JSON without losing an int64: parsing, writing, and JSON written already. */
export { INT64_RANGE_MESSAGE } from './int64';
export {
  JsonText,
  parseLosslessJson,
  stringifyLosslessJson,
  withoutNulls,
} from './lossless-json';
