/**
 * The VM networks in the fleet picture (issue 40 item 7): under the fleet, one bar per subnet of each VM
 * network, drawn to scale: the infrastructure, every slot (the cluster holding it named inside, spares
 * hatched grey), the mobile slice, and what is reserved everywhere else. Appended to the picture
 * `renderFleetSvg` draws; deterministic. Pure, no cdk8s import.
 */
import { Interval, parseCidr, parsePoolItem } from '../base/ip';
import { VmNetworkReportRow } from './vm-networks-report';

const FONT = 'font-family="DejaVu Sans, Helvetica, Arial, sans-serif"';
const MONO = 'font-family="DejaVu Sans Mono, Menlo, Consolas, monospace"';
const SLICE_COLORS = ['#2f6db5', '#2f8a43', '#c0701e', '#8a2f6d', '#2f8a8a', '#6d8a2f', '#b52f3a', '#5b3fa8'];
const MOBILE = '#d4a017';
const INFRA = '#555555';
const SPARE = '#d9d9d9';

const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const text = (x: number, y: number, s: string, attrs: string): string => `<text x="${x}" y="${y}" ${attrs}>${esc(s)}</text>`;

const ivOf = (t: string): Interval | undefined => { const r = parsePoolItem(t); return r.ok ? r.interval : undefined; };

/** Height the band needs for these networks. */
function vmNetworksBandHeight(rows: readonly VmNetworkReportRow[]): number {
  return rows.length ? 40 + rows.reduce((h, r) => h + 26 + Math.max(1, r.subnets.length) * 58, 0) : 0;
}

/** One subnet as a bar `w` wide: each part placed by its addresses. */
function bar(sub: VmNetworkReportRow['subnets'][number], x: number, y: number, w: number, clusterColor: (c: string) => string): string[] {
  const s = parseCidr(sub.subnet);
  if (!s.ok) return [];
  const total = Number(s.cidr.end - s.cidr.start + 1n);
  const pos = (iv: Interval): [number, number] => {
    const a = Number(iv.start - s.cidr.start) / total;
    const b = Number(iv.end - s.cidr.start + 1n) / total;
    return [x + a * w, Math.max(1.5, (b - a) * w)];
  };
  const out: string[] = [`<rect x="${x}" y="${y}" width="${w}" height="22" fill="#f4f4f4" stroke="#999" stroke-width="1"/>`];
  const part = (t: string, fill: string, label: string, labelColor = '#fff'): void => {
    const iv = ivOf(t);
    if (!iv) return;
    const [px, pw] = pos(iv);
    out.push(`<rect x="${px.toFixed(1)}" y="${y}" width="${pw.toFixed(1)}" height="22" fill="${fill}"><title>${esc(`${label}: ${t}`)}</title></rect>`);
    if (pw > label.length * 6.5 + 6) out.push(text(Math.round(px + 4), y + 15, label, `${FONT} font-size="11" fill="${labelColor}"`));
  };
  for (const sl of sub.slots) part(sl.cidr, sl.cluster ? clusterColor(sl.cluster) : SPARE, sl.cluster ?? 'spare', sl.cluster ? '#fff' : '#555');
  part(sub.mobile, MOBILE, 'mobile', '#222');
  for (const i of sub.infrastructure) part(i, INFRA, 'infra');
  for (const r of sub.reserved) part(r, '#000', '');
  out.push(text(x, y + 36, `${sub.subnet}: mobile ${sub.mobile}${sub.infrastructure.length ? `, infrastructure ${sub.infrastructure.join(', ')}` : ''}; grey: reserved on every cluster`,
    `${MONO} font-size="11" fill="#444"`));
  return out;
}

/** The band, its top at `y`, `width` wide (the picture's width). */
function vmNetworksBand(rows: readonly VmNetworkReportRow[], y: number, width: number): string[] {
  if (!rows.length) return [];
  const names = [...new Set(rows.flatMap((r) => r.clusters.map((c) => c.cluster)))].sort();
  const clusterColor = (c: string): string => SLICE_COLORS[names.indexOf(c) % SLICE_COLORS.length];
  const out: string[] = [text(24, y + 20, 'VM networks: each cluster hands out only its own slice; the mobile slice is the ledger\'s, reserved everywhere', `${FONT} font-size="15" font-weight="bold" fill="#222"`)];
  let cy = y + 40;
  for (const r of rows) {
    const keeps = r.keepsAddress === 'pinned' ? 'moved VMs keep their address' : r.keepsAddress === 'guest' ? 'guest-owned addresses' : 'moved VMs get a new address';
    out.push(text(24, cy + 14, `${r.name}  ${r.topology} ${r.role.toLowerCase()}, reach ${r.reach}${r.reachDetail ? ` (${r.reachDetail})` : ''}, mtu ${r.mtu}: ${keeps}`, `${FONT} font-size="13" fill="#333"`));
    cy += 26;
    for (const s of r.subnets) {
      out.push(...bar(s, 24, cy, width - 48, clusterColor));
      cy += 58;
    }
    if (!r.subnets.length) {
      out.push(text(24, cy + 14, 'no subnets: the guest owns its address', `${FONT} font-size="12" fill="#555"`));
      cy += 58;
    }
  }
  return out;
}

/** The picture with the band appended: the root's height and viewBox grown, the band before `</svg>`. */
export function appendVmNetworks(svg: string, rows: readonly VmNetworkReportRow[]): string {
  if (!rows.length) return svg;
  const m = /<svg [^>]*width="(\d+)" height="(\d+)" viewBox="0 0 \d+ \d+">/.exec(svg);
  if (!m) return svg;
  const width = Number(m[1]);
  const height = Number(m[2]);
  const grown = height + vmNetworksBandHeight(rows);
  const band = vmNetworksBand(rows, height, width);
  return svg
    .replace(m[0], m[0].replace(`height="${height}"`, `height="${grown}"`).replace(`viewBox="0 0 ${width} ${height}"`, `viewBox="0 0 ${width} ${grown}"`))
    .replace(`<rect width="${width}" height="${height}" fill="#ffffff"/>`, `<rect width="${width}" height="${grown}" fill="#ffffff"/>`)
    .replace(/<\/svg>\n?$/, `${band.join('\n')}\n</svg>\n`);
}
