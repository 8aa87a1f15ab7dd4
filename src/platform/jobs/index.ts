/** Periodic jobs: once per tick across every instance. */
export {
  Job,
  type JobRun,
  type JobSchedule,
  type PeriodicJob,
} from './job.decorator';
export { PollingLoop, type Timers } from './polling-loop';
