/**
 * A picture of the fleet as a self-contained SVG (no fonts or images fetched): the shared
 * cross-cluster network as a bus with its address budget, every cluster as a box with its mode,
 * in-cluster CIDR and gateway addresses wired to the bus. Up to DETAILED_MAX clusters get full boxes;
 * larger fleets a compact tile grid (and beyond GRID_MAX a "+N more" summary). Pure, no cdk8s import.
 */
import { PlanReport, PlanRow } from './plan-report';
import { appendVmNetworks } from './vm-networks-svg';

export const DETAILED_MAX = 12;
export const GRID_MAX = 400;

const COLORS: Record<string, { fill: string; stroke: string }> = {
  gateway: { fill: '#e8f1fb', stroke: '#2f6db5' },
  direct: { fill: '#fdf0e3', stroke: '#c0701e' },
  native: { fill: '#eaf6ec', stroke: '#2f8a43' },
};
const BUS = '#5b3fa8';
const FONT = 'font-family="DejaVu Sans, Helvetica, Arial, sans-serif"';
const MONO = 'font-family="DejaVu Sans Mono, Menlo, Consolas, monospace"';
/** White halo so labels stay readable where they cross wires. */
const HALO = 'stroke="#ffffff" stroke-width="4" paint-order="stroke"';

function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

const bare = (a: string): string => a.replace(/\/\d+$/, '');

function text(x: number, y: number, s: string, attrs = ''): string {
  return `<text x="${x}" y="${y}" ${attrs}>${escapeXml(s)}</text>`;
}

/** Render the fleet picture. Deterministic: same report, same bytes. */
export function renderFleetSvg(r: PlanReport): string {
  const svg = r.clusters.length > DETAILED_MAX ? grid(r) : r.sites && r.sites.length > 1 ? detailedSites(r, r.sites) : detailed(r);
  return appendVmNetworks(svg, r.vmNetworks ?? []); // issue 40: each cluster's slice of each VM network
}

function header(r: PlanReport, width: number): string[] {
  const t = r.totals;
  const s = t.sharedNetwork;
  const modes = Object.entries(t.byModeCount).filter(([, n]) => n > 0).map(([m, n]) => `${n} ${m}`).join(', ');
  return [
    text(24, 34, `fleet ${r.fleet}`, `${FONT} font-size="20" font-weight="bold" fill="#222"`),
    text(24, 54, `${t.clusters} clusters (${modes}), ${t.nodes} nodes`, `${FONT} font-size="13" fill="#444"`),
    text(24, 71, `shared network ${s.name}: ${s.needed} of ${s.usable} usable addresses planned, ${s.free} free`, `${FONT} font-size="13" fill="#444"`),
    text(24, 88, `all-direct would need ${t.wouldNeed.directWithSurge}; this plan saves ${t.savedVersusDirect}`, `${FONT} font-size="13" fill="#444"`),
    legend(width - 330, 24),
    budgetBar(r, width - 330, 50, 300),
    text(width - 330, 78, `shared addresses: ${s.needed} planned of ${s.usable} usable`, `${FONT} font-size="11" fill="#555"`),
  ];
}

function legend(x: number, y: number): string {
  const items = Object.entries(COLORS).map(([m, c], i) =>
    `<rect x="${x + i * 105}" y="${y}" width="14" height="14" rx="3" fill="${c.fill}" stroke="${c.stroke}" stroke-width="2"/>`
    + text(x + i * 105 + 20, y + 12, m, `${FONT} font-size="12" fill="#333"`));
  return items.join('');
}

function budgetBar(r: PlanReport, x: number, y: number, w: number): string {
  const s = r.totals.sharedNetwork;
  const frac = s.usable > 0 ? Math.min(1, s.needed / s.usable) : 1;
  return `<rect x="${x}" y="${y}" width="${w}" height="10" rx="5" fill="#ddd"/>`
    + `<rect x="${x}" y="${y}" width="${Math.max(2, Math.round(w * frac))}" height="10" rx="5" fill="${BUS}"/>`;
}

function detailed(r: PlanReport): string {
  const n = r.clusters.length;
  const perRow = Math.max(1, Math.ceil(n / 2));
  const boxW = 230;
  const gap = 30;
  const width = Math.max(1000, 48 + perRow * boxW + (perRow - 1) * gap);
  const maxGw = Math.max(1, ...r.clusters.map((c) => c.gateways.length + (c.gatewayVip ? 1 : 0)));
  const boxH = 92 + 16 * maxGw;
  const topY = 120;
  const busY = topY + boxH + 70;
  const bottomY = busY + 70;
  const height = (n > perRow ? bottomY + boxH : busY + 40) + 40;
  const s = r.totals.sharedNetwork;
  const out: string[] = [
    ...svgOpen(r, width, height),
    // the shared network bus
    `<rect x="24" y="${busY - 7}" width="${width - 48}" height="14" rx="7" fill="${BUS}"/>`,
  ];
  // labels after the clusters' attachment lines, so their halo masks the lines that cross them
  const busLabels = [
    text(30, busY + 26, `shared cross-cluster network ${s.name} /${s.prefixLength}`, `${FONT} font-size="13" font-weight="bold" fill="${BUS}" ${HALO}`),
    text(width - 30, busY + 26, `${s.needed} / ${s.usable} usable planned, ${s.free} free`, `${FONT} font-size="12" fill="${BUS}" text-anchor="end" ${HALO}`),
  ];
  r.clusters.forEach((c, i) => {
    const top = i < perRow;
    const col = top ? i : i - perRow;
    const rowCount = top ? Math.min(n, perRow) : n - perRow;
    const rowW = rowCount * boxW + (rowCount - 1) * gap;
    const x = Math.round((width - rowW) / 2 + col * (boxW + gap));
    const y = top ? topY : bottomY;
    out.push(clusterBox(c, x, y, boxW, boxH, top ? y + boxH : y, busY, top));
  });
  out.push(...busLabels, '</svg>');
  return out.join('\n') + '\n';
}

/**
 * A fleet across sites (issue #24): one bus segment per site (its subnet, VLAN, MTU), the site's clusters
 * above and below it, and a router between neighbouring segments with both routers' addresses.
 */
function detailedSites(r: PlanReport, sites: NonNullable<PlanReport['sites']>): string {
  const boxW = 230;
  const gap = 30;
  const routerGap = 150;
  const cols = sites.map((st) => Math.max(1, Math.ceil(st.clusters.length / 2)));
  const blockW = (k: number) => cols[k] * boxW + (cols[k] - 1) * gap;
  const total = sites.reduce((n, _, k) => n + blockW(k), 0) + routerGap * (sites.length - 1);
  const width = Math.max(1000, 48 + total);
  const maxGw = Math.max(1, ...r.clusters.map((c) => c.gateways.length + (c.gatewayVip ? 1 : 0)));
  const boxH = 92 + 16 * maxGw;
  const topY = 120;
  const busY = topY + boxH + 70;
  const bottomY = busY + 70;
  const height = bottomY + boxH + 40;
  const out: string[] = [...svgOpen(r, width, height)];
  const labels: string[] = [];
  let x0 = Math.round((width - total) / 2);
  sites.forEach((st, k) => {
    const w = blockW(k);
    out.push(`<rect x="${x0 - 10}" y="${busY - 7}" width="${w + 20}" height="14" rx="7" fill="${BUS}"/>`);
    const a = st.attachment;
    const vlan = a.type === 'bridge' && a.vlan ? `, VLAN ${a.vlan}` : '';
    labels.push(text(x0, busY + 26, `site ${st.name}: ${st.subnets.join(', ')}${vlan}${st.mtu ? `, MTU ${st.mtu}` : ''}`, `${FONT} font-size="12" font-weight="bold" fill="${BUS}" ${HALO}`));
    st.clusters.forEach((name, j) => {
      const c = r.clusters.find((x) => x.cluster === name);
      if (!c) return;
      const top = j < cols[k];
      const x = x0 + (top ? j : j - cols[k]) * (boxW + gap);
      const y = top ? topY : bottomY;
      out.push(clusterBox(c, x, y, boxW, boxH, top ? y + boxH : y, busY, top));
    });
    const next = sites[k + 1];
    if (next) {
      const rx = x0 + w + routerGap / 2;
      out.push(`<line x1="${x0 + w + 10}" y1="${busY}" x2="${rx + routerGap / 2 - 10}" y2="${busY}" stroke="#888" stroke-width="3" stroke-dasharray="6 4"/>`);
      out.push(`<circle cx="${rx}" cy="${busY}" r="16" fill="#fff" stroke="#444" stroke-width="2"/>`, text(rx, busY + 4, 'R', `${FONT} font-size="13" font-weight="bold" fill="#444" text-anchor="middle"`));
      labels.push(text(rx, busY - 48, 'routers', `${FONT} font-size="11" fill="#444" text-anchor="middle" ${HALO}`),
        text(rx, busY - 34, `${st.router ?? '?'}`, `${MONO} font-size="10" fill="#444" text-anchor="middle" ${HALO}`),
        text(rx, busY - 22, `${next.router ?? '?'}`, `${MONO} font-size="10" fill="#444" text-anchor="middle" ${HALO}`));
    }
    x0 += w + routerGap;
  });
  out.push(...labels, '</svg>');
  return out.join('\n') + '\n';
}

function clusterBox(c: PlanRow, x: number, y: number, w: number, h: number, edgeY: number, busY: number, above: boolean): string {
  const col = COLORS[c.mode];
  const parts: string[] = [];
  parts.push(`<g>`);
  // wires to the bus: one per gateway, or one thick wire for a direct/native slice
  const wires = c.gateways.length ? c.gateways.map((g) => bare(g.crossCluster)) : (c.sharedRange ? [c.sharedRange] : []);
  wires.forEach((label, k) => {
    const wx = x + Math.round(((k + 1) * w) / (wires.length + 1));
    const busEdge = above ? busY - 7 : busY + 7;
    parts.push(`<line x1="${wx}" y1="${edgeY}" x2="${wx}" y2="${busEdge}" stroke="${col.stroke}" stroke-width="${c.gateways.length ? 2 : 5}"/>`);
    parts.push(`<circle cx="${wx}" cy="${busEdge}" r="4" fill="${col.stroke}"/>`);
    // gateway addresses are in the box; a direct/native slice is labelled on its wire
    if (!c.gateways.length) parts.push(text(wx + 7, above ? edgeY + 24 : edgeY - 16, label, `${MONO} font-size="11" fill="#222" ${HALO}`));
  });
  parts.push(`<rect x="${x}" y="${y}" width="${w}" height="${h}" rx="8" fill="${col.fill}" stroke="${col.stroke}" stroke-width="2"/>`);
  parts.push(text(x + 12, y + 22, c.cluster, `${FONT} font-size="15" font-weight="bold" fill="#111"`));
  parts.push(text(x + w - 12, y + 22, `${c.mode}${c.delivery === 'harvester' ? ' · harvester' : ''}`, `${FONT} font-size="12" fill="${col.stroke}" text-anchor="end"`));
  parts.push(text(x + 12, y + 42, `${c.nodes} nodes, ${c.syncControllers} sync controllers`, `${FONT} font-size="12" fill="#333"`));
  let ly = y + 60;
  if (c.inClusterCidr) {
    parts.push(text(x + 12, ly, `in-cluster ${c.inClusterCidr}`, `${MONO} font-size="11" fill="#222"`));
    ly += 16;
    if (c.inCluster) { parts.push(text(x + 12, ly, `${c.inCluster.needed} needed / ${c.inCluster.usable} usable`, `${FONT} font-size="11" fill="#555"`)); ly += 16; }
  } else {
    parts.push(text(x + 12, ly, `on the shared network: ${c.sharedAddresses} addresses`, `${FONT} font-size="11" fill="#555"`));
    ly += 16;
  }
  c.gateways.forEach((g, k) => {
    parts.push(text(x + 12, ly, `gw${k} ${bare(g.inCluster)} ↔ ${bare(g.crossCluster)}`, `${MONO} font-size="11" fill="#222"`));
    ly += 16;
  });
  if (c.gatewayVip) parts.push(text(x + 12, ly, `vip ${bare(c.gatewayVip)} (next hop, VRRP)`, `${MONO} font-size="11" fill="#555"`));
  parts.push(`</g>`);
  return parts.join('\n');
}

function grid(r: PlanReport): string {
  const shown = r.clusters.slice(0, GRID_MAX);
  const hidden = r.clusters.length - shown.length;
  const tileW = 112;
  const tileH = 40;
  const gap = 6;
  const cols = Math.min(12, Math.max(6, Math.ceil(Math.sqrt(shown.length * 1.6))));
  const width = Math.max(1000, 48 + cols * (tileW + gap));
  const rows = Math.ceil(shown.length / cols);
  const gridY = 150;
  const height = gridY + rows * (tileH + gap) + (hidden > 0 ? 40 : 10) + 20;
  const s = r.totals.sharedNetwork;
  const out: string[] = [
    ...svgOpen(r, width, height),
    `<rect x="24" y="116" width="${width - 48}" height="14" rx="7" fill="${BUS}"/>`,
    text(30, 144, `shared cross-cluster network ${s.name} /${s.prefixLength}: ${s.needed} / ${s.usable} usable planned, ${s.free} free (every cluster below attaches to it)`, `${FONT} font-size="12" fill="${BUS}"`),
  ];
  shown.forEach((c, i) => {
    const x = 24 + (i % cols) * (tileW + gap);
    const y = gridY + Math.floor(i / cols) * (tileH + gap);
    const col = COLORS[c.mode];
    out.push(`<rect x="${x}" y="${y}" width="${tileW}" height="${tileH}" rx="5" fill="${col.fill}" stroke="${col.stroke}" stroke-width="1.5"/>`);
    out.push(text(x + 6, y + 16, c.cluster.length > 15 ? `${c.cluster.slice(0, 14)}…` : c.cluster, `${FONT} font-size="11" font-weight="bold" fill="#111"`));
    const detail = c.gateways.length ? `${c.gateways.length} gw · ${c.nodes} nodes` : `${c.sharedAddresses} addr · ${c.nodes} nodes`;
    out.push(text(x + 6, y + 31, detail, `${FONT} font-size="10" fill="#444"`));
  });
  if (hidden > 0) out.push(text(24, gridY + rows * (tileH + gap) + 24, `+ ${hidden} more clusters (see migration-mesh plan --output json)`, `${FONT} font-size="13" fill="#444"`));
  out.push('</svg>');
  return out.join('\n') + '\n';
}

/** The document start shared by both layouts: root element, title, white background, header. */
function svgOpen(r: PlanReport, width: number, height: number): string[] {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">`,
    `<title>Migration Mesh fleet ${escapeXml(r.fleet)}</title>`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    ...header(r, width),
  ];
}
