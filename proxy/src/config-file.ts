/** Reading the mounted ConfigMap: JSON or YAML, validated by the shared zod schema, with change detection. */
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { parseProxyConfig, type ProxyConfig } from './config';

export function parseConfigText(text: string, file = 'config'): ProxyConfig {
  let raw: unknown;
  const t = text.trim();
  try {
    raw = t.startsWith('{') ? JSON.parse(t) : parseYaml(t);
  } catch (e) {
    throw new Error(`${file}: not valid JSON/YAML: ${(e as Error).message}`);
  }
  try {
    return parseProxyConfig(raw);
  } catch (e) {
    throw new Error(`${file}: ${(e as Error).message}`);
  }
}

export function loadConfigFile(file: string): ProxyConfig {
  let text: string;
  try { text = fs.readFileSync(file, 'utf8'); } catch (e) { throw new Error(`cannot read config ${file}: ${(e as Error).message}`); }
  return parseConfigText(text, file);
}

/** Hash of the config file and of the TLS files it names (a cert rotation is a change too). */
export function contentHash(file: string): string {
  const h = crypto.createHash('sha256');
  let text = '';
  try { text = fs.readFileSync(file, 'utf8'); } catch { text = '<unreadable>'; }
  h.update(text);
  try {
    const cfg = parseConfigText(text, file);
    if (cfg.tls.mode !== 'plaintext') {
      for (const f of [cfg.tls.caFile, cfg.tls.certFile, cfg.tls.keyFile]) {
        try { h.update(fs.readFileSync(f)); } catch { h.update('<unreadable>'); }
      }
    }
  } catch { /* invalid config: the text hash alone decides */ }
  return h.digest('hex');
}

/**
 * Calls `onChange` when the content changes. A Kubernetes ConfigMap volume swaps a `..data` symlink, so
 * the file inode is not a reliable signal: watch the directory (fast path) and also poll the content hash.
 */
export function watchConfig(file: string, intervalMs: number, onChange: () => void): () => void {
  let last = contentHash(file);
  const check = () => {
    const h = contentHash(file);
    if (h !== last) { last = h; onChange(); }
  };
  let debounce: NodeJS.Timeout | undefined;
  let watcher: fs.FSWatcher | undefined;
  try {
    watcher = fs.watch(path.dirname(path.resolve(file)), () => {
      clearTimeout(debounce);
      debounce = setTimeout(check, 100);
      debounce.unref();
    });
    watcher.on('error', () => { /* polling still runs */ });
  } catch { /* polling only */ }
  const timer = setInterval(check, intervalMs);
  timer.unref();
  return () => { clearInterval(timer); clearTimeout(debounce); watcher?.close(); };
}
