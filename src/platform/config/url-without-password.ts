/** A connection URL as a log line or a message may show it: its password, if any, as `***`. */
export function withoutPassword(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = '***';
  return parsed.toString();
}
