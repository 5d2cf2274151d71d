/**
 * Temp directories and cdk8s apps for the library's tests that leave nothing behind.
 *
 * Each test file's suite removes the directories it made after its last test, whether its tests passed or failed
 * (jest gives every test file its own copy of this module, so the afterAll below belongs to the importing file;
 * import it at the top of a test file, not inside a test). cdk8s's `Testing.app()` made a directory under /tmp for
 * every app and never removed it (1,231 `cdk8s.outdir.*` were left on the lab machine); the library's tests read
 * charts with `toJson()` and never synthesize an app, so `testApp()` gives its app an output directory inside one
 * such removed directory, made only if something synthesizes after all.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { App, AppProps, Chart } from 'cdk8s';

const made: string[] = [];
const removeMade = (): void => { for (const d of made.splice(0)) fs.rmSync(d, { recursive: true, force: true }); };
if (typeof afterAll === 'function') afterAll(removeMade);
process.once('exit', removeMade);

/** A fresh directory under the system's temp directory, removed after this test file's suite. */
export function suiteTmpDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  made.push(dir);
  return dir;
}

let appOutdir: string | undefined;
/** A cdk8s App for tests (Testing.app() without its leaked temp directory). */
export function testApp(props: AppProps = {}): App {
  appOutdir ??= path.join(suiteTmpDir('mm-test-app-'), 'dist');
  return new App({ outdir: appOutdir, ...props });
}

/** A Chart in a fresh testApp() (Testing.chart() without its leaked temp directory). */
export function testChart(): Chart {
  return new Chart(testApp(), 'test');
}
