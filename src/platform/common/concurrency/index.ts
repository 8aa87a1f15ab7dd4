/** Versions of a resource: its `ETag`, and the `If-Match` a change names. */
export { etagOf, staleVersion, versionsOf } from './versions';
export {
  ApiIfMatch,
  ApiIfMatchOptional,
  ApiIfNoneMatch,
  ETAG_HEADER,
} from './versions-openapi';
