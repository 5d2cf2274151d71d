/** Reading a directory tree back in tests. */
import * as fs from 'fs';
import * as path from 'path';

/** Every file under `dir` (hidden ones included), relative, with its content; empty when `dir` is absent. */
export function files(dir: string): Map<string, string> {
  const m = new Map<string, string>();
  const walk = (d: string, rel: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(path.join(d, e.name), r);
      else m.set(r, fs.readFileSync(path.join(d, e.name), 'utf8'));
    }
  };
  if (fs.existsSync(dir)) walk(dir, '');
  return m;
}
