// Preloaded with `node --require` into a service a test starts: the process's own clock runs
// CLOCK_AHEAD_MS ahead of the machine's (as `faketime` would set it), while the database
// server's clock stays right. Only JavaScript's Date is moved: a test of an instance whose
// clock is off (test/clocks.e2e-spec.ts).
'use strict';
const aheadMs = Number(process.env.CLOCK_AHEAD_MS);
if (!Number.isFinite(aheadMs)) throw new Error('clock-ahead.cjs needs CLOCK_AHEAD_MS');
const RealDate = Date;
class AheadDate extends RealDate {
  constructor(...args) {
    if (args.length === 0) super(RealDate.now() + aheadMs);
    else super(...args);
  }
  static now() {
    return RealDate.now() + aheadMs;
  }
}
globalThis.Date = AheadDate;
