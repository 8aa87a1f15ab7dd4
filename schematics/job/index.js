// @ts-check
'use strict';
const { join } = require('@angular-devkit/core');
const { strings } = require('@angular-devkit/core');
const { chain } = require('@angular-devkit/schematics');
const { registerInModule } = require('../resource/module-file');
const { formatted, moduleFileOf, refuse } = require('../resource/index');
const {
  MODULES_ROOT,
  moduleFolder,
  toPlatform,
} = require('../resource/layout');

const KEBAB_CASE = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;

/**
 * `nest g job <name> <module folder>`: a periodic job in an existing module
 * (docs/conventions.md, "Periodic jobs"), `<name>.job.ts` with its schedule and a run that
 * works in bounded batches, added to the module's providers. Its name is
 * `<module folder>.<name>`, as logs and metrics show it.
 *
 * @param {Record<string, any>} options
 */
function job(options) {
  return (tree) => {
    const name = String(options.name ?? '');
    if (!KEBAB_CASE.test(name)) {
      throw refuse(
        `"${name}" is not a job name: use kebab-case words of lowercase letters and digits, such as overdue or send-reminders`,
      );
    }
    const moduleDir = moduleFolder(String(options.path ?? ''));
    if (moduleDir === undefined || moduleDir === MODULES_ROOT) {
      throw refuse(
        `nest g job adds to an existing module: name its folder under ${MODULES_ROOT} (nest g job ${name} inventory)`,
      );
    }
    const moduleFile = moduleFileOf(
      tree,
      { moduleDir, name },
      { command: 'job' },
    );
    const file = join(moduleDir, `${name}.job.ts`);
    if (tree.exists(file)) {
      throw refuse(`${file} already exists: choose another name`);
    }
    const jobName = `${moduleDir.split('/').pop()}.${name}`;
    if (jobName.length > 64) {
      throw refuse(
        `the job's name ${jobName} is longer than 64 characters: choose a shorter one`,
      );
    }
    const className = `${strings.classify(name)}Job`;
    const every = String(options.every ?? '1h');
    let registered;
    try {
      registered = registerInModule(
        tree.read(moduleFile).toString(),
        moduleFile,
        {
          imports: [{ symbol: className, from: `./${name}.job` }],
          providers: [className],
        },
      );
    } catch (error) {
      throw refuse(error.message);
    }
    return chain([
      (written) => {
        written.create(
          file,
          source({
            jobName,
            className,
            every,
            platform: toPlatform(moduleDir),
          }),
        );
        written.overwrite(moduleFile, registered);
      },
      formatted([file, moduleFile]),
    ]);
  };
}

/** The job's file. */
function source({ jobName, className, every, platform }) {
  return `import { Logger } from '@nestjs/common';
import { Job, type JobRun, type PeriodicJob } from '${platform}/jobs';

/** Rows one batch handles: a short transaction. */
const BATCH = 500;
/** Batches one run handles at most: a backlog is worked off over runs a second apart. */
const BATCHES_PER_RUN = 10;

/**
 * Once per tick across every instance (docs/conventions.md, "Periodic jobs"). A run may be
 * repeated after a crash: each batch must be safe to do twice (a conditional write).
 */
@Job('${jobName}')
export class ${className} implements PeriodicJob {
  private readonly logger = new Logger(${className}.name);
  readonly schedule = { every: '${every}' };

  /** True when it stopped at its bound with work left: the same tick runs again a second later. */
  async run(run: JobRun): Promise<boolean> {
    let handled = 0;
    for (let batch = 1; ; batch += 1) {
      const count = await this.handleBatch(run.tick, BATCH);
      handled += count;
      if (count < BATCH || batch === BATCHES_PER_RUN || !(await run.nextBatch())) {
        if (handled > 0) this.logger.log(\`handled \${handled} for the tick at \${run.tick.toISOString()}\`);
        return count === BATCH;
      }
    }
  }

  /** Up to \`limit\` of the rows due at \`tick\`, in one transaction; how many it handled. */
  private handleBatch(tick: Date, limit: number): Promise<number> {
    void tick;
    void limit;
    return Promise.resolve(0);
  }
}
`;
}

module.exports = { job };
