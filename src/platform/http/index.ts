/** HTTP as the service speaks it: the public URL a link starts with. */
export { publicBaseUrlOf } from './public-base-url';
