/**
 * Temp directories and cdk8s apps for the library's tests that leave nothing behind.
 *
 * Each test file's suite removes the directories it made after its last test, whether its tests passed or failed
 * (jest gives every test file its own copy of the proxy kit's helpers, whose afterAll belongs to the importing file;
 * import it at the top of a test file, not inside a test). cdk8s's `Testing.app()` made a directory under /tmp for
 * every app and never removed it (1,231 `cdk8s.outdir.*` were left on the lab machine); the library's tests read
 * charts with `toJson()` and never synthesize an app, so `testApp()` gives its app an output directory inside one
 * such removed directory, made only if something synthesizes after all.
 */
import * as path from 'path';
import { App, AppProps, Chart } from 'cdk8s';
import { tmpDir } from '../../proxy/src/testkit/helpers';

/**
 * A fresh directory under the system's temp directory, removed after this test file's suite: the proxy test kit's
 * tmpDir, which registers jest's afterAll as well as its exit handler (one mechanism for both packages).
 */
export const suiteTmpDir = (prefix: string): string => tmpDir(prefix);

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
