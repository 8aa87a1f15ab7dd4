/** What a request's parameters and body must be: ids, int64 properties, integers, text. */
export { Int64Param, Int64Property } from './int64.decorators';
export { IntegerQueryProperty } from './integer-query.decorator';
export { PathParam } from './path-param';
export { UuidParam } from './uuid-param.decorator';
export {
  IsDateTime,
  IsStorableText,
  IsUnicodeString,
  MaxUtf8Bytes,
} from './validators';
