import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** One sample of a scrape: `name{label="value",...} value`. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE_LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: \d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/g;

/**
 * The samples of a scrape in Prometheus's text format (version 0.0.4). Throws on a line that
 * is neither a comment nor a sample, so a malformed scrape fails the test that reads it.
 */
export function parsePrometheusText(text: string): Sample[] {
  return text
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const match = SAMPLE_LINE.exec(line);
      if (!match) throw new Error(`not a Prometheus sample: ${line}`);
      const [, name, labelText = '', value] = match;
      const labels = Object.fromEntries(
        [...labelText.matchAll(LABEL)].map(([, label, text]) => [
          label,
          text.replace(/\\(.)/g, (_, escaped: string) =>
            escaped === 'n' ? '\n' : escaped,
          ),
        ]),
      );
      return { name, labels, value: Number(value) };
    });
}

/** The value of the one sample named `name` whose labels include `labels`; undefined if none. */
export function sampleValue(
  samples: Sample[],
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const found = samples.filter(
    (sample) =>
      sample.name === name &&
      Object.entries(labels).every(
        ([key, value]) => sample.labels[key] === value,
      ),
  );
  if (found.length > 1) {
    throw new Error(
      `${found.length} samples of ${name} match ${JSON.stringify(labels)}`,
    );
  }
  return found[0]?.value;
}

/** Debian's promtool (package prometheus), which checks a scrape as Prometheus reads it. */
export const PROMTOOL = process.env.PROMTOOL_PATH ?? '/usr/bin/promtool';

/** What promtool says of a scrape: exit status and problems; undefined without promtool. */
export function promtoolCheck(
  text: string,
): { status: number | null; output: string } | undefined {
  if (!existsSync(PROMTOOL)) {
    if (process.env.CI) {
      throw new Error(
        `CI must check the metrics with promtool, but there is none at ${PROMTOOL} (apt-get install -y prometheus)`,
      );
    }
    return undefined;
  }
  const result = spawnSync(PROMTOOL, ['check', 'metrics'], {
    input: text,
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { status: result.status, output: result.stdout + result.stderr };
}
