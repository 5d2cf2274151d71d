/**
 * The command line of `migration-mesh`, read strictly: every command has its own option set, and a
 * command line that could be misread (an unknown or misspelt flag, a value given to a switch, an
 * option with no value, a value that is itself a flag, an option given twice, the wrong number of fleet
 * files) is a usage error that names the flag, the problem and the fix, before anything is read or
 * written. Node's `util.parseArgs` splits the words; the checks below give the messages.
 */
import * as fs from 'fs';
import * as path from 'path';
import { parseArgs as splitArgs } from 'util';

/** What a command function receives: the command, its fleet files and its flags (a switch is `true`). */
export interface Args { cmd: string; files: string[]; flags: Map<string, string | true> }

/** A command line that cannot be run as written: exit 2 with the usage of the command it names. */
export class UsageError extends Error {
  constructor(message: string, readonly usage: string) {
    super(message);
  }
}

/** What the command line asks for: run a command, or print (help, version) and exit 0. */
type Invocation = { kind: 'run'; args: Args } | { kind: 'print'; text: string };

interface OptionSpec {
  type: 'string' | 'boolean';
  short?: string;
  /** The value's placeholder in the usage (`DIR`), for string options. */
  value?: string;
  /** The only values accepted. */
  choices?: readonly string[];
}

interface CommandSpec {
  /** The synopsis lines and the description, as printed by `migration-mesh CMD --help`. */
  usage: string;
  options: Record<string, OptionSpec>;
  /** How many fleet files the command takes. */
  files: { min: number; max: number };
  /** Checks across options and files; returns the problem, if any. */
  check?: (a: Args) => string | undefined;
}

const str = (value: string, extra: Partial<OptionSpec> = {}): OptionSpec => ({ type: 'string', value, ...extra });
const BOOL: OptionSpec = { type: 'boolean' };
const LEDGER = str('FILE');
const RENAMED_FROM = str('OLD');
const OUT = str('DIR', { short: 'o' });

const oneFleetWith = (flag: string) => (a: Args) =>
  a.flags.has(flag) && a.files.length > 1 ? `--${flag} applies to one fleet, got ${a.files.length} fleet files: run the command once per fleet` : undefined;

const COMMANDS: Record<string, CommandSpec> = {
  synth: {
    usage: `  migration-mesh synth FLEET.yaml... [--out DIR] [--frozen] [--ledger FILE] [--no-svg] [--renamed-from OLD]
      validate, plan against the ledger beside each fleet file (FLEET.ledger.yaml, or --ledger FILE),
      write DIR/<fleet>/<cluster>/... and the updated ledger. DIR: --out (-o), else $CDK8S_OUTDIR,
      else dist. --frozen fails instead when the ledger would change (CI).
      Also writes DIR/<fleet>/fleet.svg, a picture of the fleet (--no-svg to skip).
`,
    options: { out: OUT, frozen: BOOL, ledger: LEDGER, 'no-svg': BOOL, 'renamed-from': RENAMED_FROM },
    files: { min: 1, max: Infinity },
    check: (a) => oneFleetWith('ledger')(a) ?? oneFleetWith('renamed-from')(a),
  },
  validate: {
    usage: `  migration-mesh validate FLEET.yaml... [--output text|json] [--ledger FILE] [--frozen] [--renamed-from OLD]
      check fleet files as synth would (in memory, writing nothing); every problem is listed with
      its code, field path and a fix (docs/errors.md lists the codes). --output json: one entry per
      file, problems as data. --ledger, --frozen, --renamed-from: as for synth.
`,
    options: { output: str('FORMAT', { choices: ['text', 'json'] }), ledger: LEDGER, frozen: BOOL, 'renamed-from': RENAMED_FROM },
    files: { min: 1, max: Infinity },
    check: (a) => oneFleetWith('ledger')(a) ?? oneFleetWith('renamed-from')(a),
  },
  plan: {
    usage: `  migration-mesh plan FLEET.yaml [--output table|json] [--svg FILE] [--ledger FILE] [--renamed-from OLD]
      the address plan per cluster (mode, in-cluster CIDR, gateway addresses, pool needed /
      usable / free, what direct mode would need) and the shared-network totals. Writes nothing
      but the SVG picture when --svg is given.
`,
    options: { output: str('FORMAT', { choices: ['table', 'json'] }), svg: str('FILE'), ledger: LEDGER, 'renamed-from': RENAMED_FROM },
    files: { min: 1, max: 1 },
  },
  diff: {
    usage: `  migration-mesh diff OLD.fleet.yaml NEW.fleet.yaml [--ledger FILE] [--output text|json] [--renamed-from OLD]
  migration-mesh diff FLEET.yaml [--out DIR] [--ledger FILE] [--output text|json] [--renamed-from OLD]
      what a fleet change does before it is applied: per cluster the files added / removed /
      changed, the addresses that move, peer-table entries, and a one-line churn summary.
      One file: compared against DIR/<fleet>/ (DIR: --out (-o), else $CDK8S_OUTDIR, else dist)
      and the committed ledger. Exit code: 0 no change, 1 changes, 2 error (like git diff --exit-code).
`,
    options: { out: OUT, ledger: LEDGER, output: str('FORMAT', { choices: ['text', 'json'] }), 'renamed-from': RENAMED_FROM },
    files: { min: 1, max: 2 },
    check: (a) => (a.flags.has('out') && a.files.length === 2 ? '--out is for the one-file form (diff FLEET.yaml --out DIR); OLD NEW are both synthesized in memory' : undefined),
  },
  reclaim: {
    usage: `  migration-mesh reclaim FLEET.yaml (--cluster NAME | --address ADDR | --all) [--ledger FILE]
  migration-mesh reclaim FLEET.yaml --vm-network NET [--cluster NAME | --vm NS/NAME] [--ledger FILE]
      lift the quarantine of released addresses (a removed cluster's CIDR, shared addresses, VIP),
      once their old holders are gone from the network; until then no member is given them.
      --vm-network: release what the ledger keeps for a VM network the fleet no longer declares
      (its split, slots and mobile addresses), a removed cluster's slot of it, or a mobile address.
`,
    options: { cluster: str('NAME'), address: str('ADDR'), all: BOOL, ledger: LEDGER, 'vm-network': str('NET'), vm: str('NS/NAME') },
    files: { min: 1, max: 1 },
    check: (a) => (['cluster', 'address', 'all', 'vm-network'].some((k) => a.flags.has(k))
      ? (a.flags.has('vm') && !a.flags.has('vm-network') ? '--vm is for reclaim --vm-network NET --vm NS/NAME' : undefined)
      : 'reclaim needs --cluster NAME, --address ADDR, --all or --vm-network NET (what to lift the quarantine of)'),
  },
  inventory: {
    usage: `  migration-mesh inventory FLEET.yaml [--cluster NAME] [--context-map FILE] [--kubeconfig FILE] [--out FILE] [--timeout SECONDS]
      read what runs where from every cluster of the fleet (read-only: nodes, pods, PVCs, KubeVirt VMs and
      VMIs; kubeconfig context named as the cluster, or as --context-map FILE says) and write the Inventory
      document evacuate plans from (FLEET.inventory.yaml, or --out FILE; --out - prints it). --cluster NAME
      lists that cluster's VMs only. Nothing is written unless every cluster answered within --timeout
      (default 30). Exit code: 0 written, 1 a cluster could not be read.
`,
    options: { cluster: str('NAME'), 'context-map': str('FILE'), kubeconfig: str('FILE'), out: str('FILE'), timeout: str('SECONDS') },
    files: { min: 1, max: 1 },
    check: (a) => (a.flags.has('timeout') && !(Number(a.flags.get('timeout')) > 0) ? '--timeout needs a number of seconds above 0' : undefined),
  },
  evacuate: {
    usage: `  migration-mesh evacuate FLEET.yaml --cluster NAME --inventory FILE [--out FILE]
      plan the drain of cluster NAME across the fleet from an inventory (its VMs, every cluster's nodes:
      docs/migrations.md): a target per VM in its migration group with its storage and networks mapped
      and room for it, in waves within the parallel-migration limits; written as a moves file (FLEET.moves.yaml,
      or --out FILE; --out - prints it), never over an existing one. A VM no target can take is refused
      with each target's reason, and nothing is written. Exit code: 0 written, 1 refused.
`,
    options: { cluster: str('NAME'), inventory: str('FILE'), out: str('FILE') },
    files: { min: 1, max: 1 },
    check: (a) => (!a.flags.has('cluster') || !a.flags.has('inventory') ? 'evacuate needs --cluster NAME (the cluster to drain) and --inventory FILE (what runs where)' : undefined),
  },
  status: {
    usage: `  migration-mesh status FLEET.yaml [--context-map FILE] [--kubeconfig FILE] [--out DIR] [--timeout SECONDS] [--moves] [--output text|json]
      ask every cluster of the fleet (read-only; kubeconfig context named as the cluster, or as
      --context-map FILE says: cluster: context) whether it is ready to migrate: drift of
      DIR/<fleet>/<cluster>/ against the live objects (fields we write), the KubeVirt CR's migration
      network and feature gates, virt-handler and sync controllers on the migration network, gateway
      pods (through the pod proxy: VIP holder, tunnels per peer, last errors), the trust matrix (each
      cluster's current CA in every peer's kubevirt-ca) and a verdict per ordered pair; --moves also
      checks every VM of the generated Forklift Plans. Each finding has a code (docs/errors.md).
      Each cluster gets at most --timeout seconds (10). Exit code: 0 all ready, 1 not (or an error), 2 usage.
`,
    options: { out: OUT, 'context-map': str('FILE'), kubeconfig: str('FILE'), timeout: str('SECONDS'), moves: BOOL, output: str('FORMAT', { choices: ['text', 'json'] }) },
    files: { min: 1, max: 1 },
    check: (a) => (a.flags.has('timeout') && !(Number(a.flags.get('timeout')) > 0) ? `--timeout takes a number of seconds above 0, got '${String(a.flags.get('timeout'))}'` : undefined),
  },
  'pin-addresses': {
    usage: `  migration-mesh pin-addresses FLEET.yaml [--move NS/VM] [--after] [--apply] [--ledger FILE] [--context-map FILE] [--kubeconfig FILE] [--timeout SECONDS] [--output text|json]
      keep a moving VM's address (VM networks, primary Layer2): for each listed move, read the VM and its
      IPAMClaim on the source and the ledger's address, check what the target holds, and pin the address on
      the source VM's template (network.kubevirt.io/addresses) before the Forklift Plan runs. --after, once
      the move completed: a mobile address's halted source VM and its IPAMClaims are deleted; a source-slice
      address's halted VM is kept as the tombstone (labelled migrationmesh.dev/moved-to). A dry run that
      shows the diff unless --apply; one refusal and nothing is written. Needs the Role
      migration-mesh-pin-addresses, which synth emits in the served namespaces, bound to the context's identity
      (the network's pinAddressesBy, or a RoleBinding of your own). Exit code: 0 ok, 1 refused.
`,
    options: { move: str('NS/VM'), after: BOOL, apply: BOOL, ledger: LEDGER, 'context-map': str('FILE'), kubeconfig: str('FILE'), timeout: str('SECONDS'), output: str('FORMAT', { choices: ['text', 'json'] }) },
    files: { min: 1, max: 1 },
    check: (a) => (a.flags.has('timeout') && !(Number(a.flags.get('timeout')) > 0) ? `--timeout takes a number of seconds above 0, got '${String(a.flags.get('timeout'))}'`
      : a.flags.has('move') && !/^[^/\s]+\/[^/\s]+$/.test(String(a.flags.get('move'))) ? `--move takes NAMESPACE/VM, got '${String(a.flags.get('move'))}'` : undefined),
  },
  'watch-moves': {
    usage: `  migration-mesh watch-moves FLEET.yaml [--context-map FILE] [--kubeconfig FILE] [--out DIR] [--timeout SECONDS] [--output text|json]
      watch every move of the generated Forklift Plans until it completes or fails: the hub's Plan and
      Migration, each side's VirtualMachineInstanceMigration (watches, reconnected). A bar per move on a
      terminal, a line per change otherwise, a JSON line per change with --output json; a failed move
      prints its cleanup-move command. Waits at most --timeout seconds (3600).
      Exit code: 0 every move completed, 3 one failed, 4 the wait ran out, 1 an error, 2 usage.
`,
    options: { out: OUT, 'context-map': str('FILE'), kubeconfig: str('FILE'), timeout: str('SECONDS'), output: str('FORMAT', { choices: ['text', 'json'] }) },
    files: { min: 1, max: 1 },
    check: (a) => (a.flags.has('timeout') && !(Number(a.flags.get('timeout')) > 0) ? `--timeout takes a number of seconds above 0, got '${String(a.flags.get('timeout'))}'` : undefined),
  },
  'cleanup-move': {
    usage: `  migration-mesh cleanup-move FLEET.yaml --move NS/VM [--apply] [--context-map FILE] [--kubeconfig FILE] [--out DIR] [--output text|json]
      list what a failed or cancelled move left in the target namespace: the VM, VMI, DataVolumes, PVCs and
      pods Forklift labelled with the Plan's and its Migrations' UIDs, and what those own. Same-named objects
      without the labels are kept and listed. Refused while the source VM is not Running or the Plan
      succeeded. A dry run unless --apply. Exit code: 0 ok, 1 refused or an error, 2 usage.
`,
    options: { move: str('NS/VM'), apply: BOOL, out: OUT, 'context-map': str('FILE'), kubeconfig: str('FILE'), output: str('FORMAT', { choices: ['text', 'json'] }) },
    files: { min: 1, max: 1 },
    check: (a) => (!/^[^/\s]+\/[^/\s]+$/.test(String(a.flags.get('move') ?? '')) ? `cleanup-move needs --move NAMESPACE/VM, got '${String(a.flags.get('move') ?? '')}'` : undefined),
  },
};

const HEADER = `usage: migration-mesh COMMAND [FILES] [OPTIONS]     (migration-mesh COMMAND --help: that command only)
`;
const FOOTER = `  migration-mesh --version | -V      the version of this package
  migration-mesh help [COMMAND] | --help | -h
  synth, validate, plan and diff take --renamed-from OLD to carry the ledger of fleet OLD over to a renamed
  fleet (without it a ledger of another fleet is refused: every address would be replanned).
  Exit codes: 0 ok, 1 fleet problems or errors (diff: changes), 2 usage errors (nothing was read or written).
`;

/** The usage of one command, or of all of them. */
export function usageOf(cmd?: string): string {
  const spec = cmd === undefined ? undefined : COMMANDS[cmd];
  if (spec) return `usage:\n${spec.usage}`;
  return `${HEADER}${Object.values(COMMANDS).map((c) => c.usage).join('')}${FOOTER}`;
}

/** This package's version, from its package.json (found upwards from this file: lib/cli/ once built, cli/ in the sources). */
function version(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (fs.existsSync(file)) {
      const pkg = JSON.parse(fs.readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'migration-mesh' && pkg.version) return pkg.version;
    }
    if (path.dirname(dir) === dir) throw new Error('cannot find the package.json of migration-mesh');
  }
}

/** The closest of `names` to `word` (edit distance at most 2, or a prefix), for "did you mean". */
function closest(word: string, names: readonly string[]): string | undefined {
  const distance = (a: string, b: string): number => {
    let row = Array.from({ length: b.length + 1 }, (_, j) => j);
    for (let i = 1; i <= a.length; i++) {
      const next = [i];
      for (let j = 1; j <= b.length; j++) next[j] = Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      row = next;
    }
    return row[b.length];
  };
  const scored = names.map((n) => ({ n, d: n.startsWith(word) && word.length >= 2 ? 0 : distance(word, n) })).sort((x, y) => x.d - y.d);
  return scored.length && scored[0].d <= 2 ? scored[0].n : undefined;
}

/**
 * Reads argv (without `node` and the script). Throws UsageError for anything that cannot be run as
 * written. `env` supplies CDK8S_OUTDIR, the default output directory of synth and diff.
 */
export function parseCommandLine(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Invocation {
  const [cmd, ...rest] = argv;
  if (cmd === undefined) throw new UsageError('no command given', usageOf());
  if (cmd === '--version' || cmd === '-V') return { kind: 'print', text: `${version()}\n` };
  if (cmd === 'help' || cmd === '--help' || cmd === '-h') {
    if (rest.length > 1 || (rest.length === 1 && !COMMANDS[rest[0]])) throw new UsageError(`help takes one command name (${Object.keys(COMMANDS).join(', ')}), got '${rest.join(' ')}'`, usageOf());
    return { kind: 'print', text: usageOf(rest[0]) };
  }
  const spec = COMMANDS[cmd];
  if (!spec) {
    const near = closest(cmd, Object.keys(COMMANDS));
    const hint = cmd.startsWith('-') ? ': options come after the command (migration-mesh COMMAND ... OPTIONS)' : near ? ` (did you mean ${near}?)` : '';
    throw new UsageError(`unknown command '${cmd}'${hint}`, usageOf());
  }
  const end = rest.indexOf('--');
  if ((end < 0 ? rest : rest.slice(0, end)).some((a) => a === '--help' || a === '-h')) return { kind: 'print', text: usageOf(cmd) };
  const args = readCommand(cmd, spec, rest);
  const problem = checkCounts(cmd, spec, args) ?? spec.check?.(args) ?? checkOutdir(spec, args, env);
  if (problem) throw new UsageError(`${cmd}: ${problem}`, usageOf(cmd));
  return { kind: 'run', args };
}

function checkCounts(cmd: string, spec: CommandSpec, a: Args): string | undefined {
  const { min, max } = spec.files;
  const n = a.files.length;
  if (n >= min && n <= max) return undefined;
  const wanted = max === Infinity ? 'one or more fleet files' : min === max ? 'one fleet file' : `${min} or ${max} fleet files`;
  return `takes ${wanted}, got ${n === 0 ? 'none' : `${n}: ${a.files.join(' ')}`}`;
}

/** An empty CDK8S_OUTDIR would write into the current directory: refuse it. */
function checkOutdir(spec: CommandSpec, a: Args, env: NodeJS.ProcessEnv): string | undefined {
  if (!spec.options.out || a.flags.has('out') || env.CDK8S_OUTDIR !== '') return undefined;
  return 'CDK8S_OUTDIR is set but empty (output would land in the current directory): unset it or give --out DIR';
}

/** The command's words, each option checked against the command's own option set. */
function readCommand(cmd: string, spec: CommandSpec, words: readonly string[]): Args {
  const options = Object.fromEntries(Object.entries(spec.options).map(([k, o]) => [k, { type: o.type, ...(o.short ? { short: o.short } : {}) }]));
  // strict: false first, to see every word (tokens) and give a message that names the flag and the fix
  const { tokens } = splitArgs({ args: [...words], options, strict: false, allowPositionals: true, tokens: true });
  const fail = (problem: string): never => {
    throw new UsageError(`${cmd}: ${problem}`, usageOf(cmd));
  };
  const flags = new Map<string, string | true>();
  const files: string[] = [];
  for (const t of tokens) {
    if (t.kind === 'positional') files.push(t.value);
    if (t.kind !== 'option') continue;
    const o = spec.options[t.name];
    if (!o) fail(unknownOption(cmd, spec, t.rawName));
    const problem = o.type === 'boolean' ? switchProblem(t.rawName, t.value) : valueProblem(t.rawName, o, t.value, t.inlineValue);
    if (problem) fail(problem);
    if (flags.has(t.name)) fail(`--${t.name} is given twice: give it once`);
    flags.set(t.name, o.type === 'boolean' ? true : String(t.value));
  }
  // and strict: true, so nothing the checks above let through can be read differently by parseArgs itself
  try {
    splitArgs({ args: [...words], options, strict: true, allowPositionals: true });
  } catch (e) {
    fail((e as Error).message);
  }
  return { cmd, files, flags };
}

function unknownOption(cmd: string, spec: CommandSpec, raw: string): string {
  const name = raw.replace(/^--?/, '');
  const near = raw.startsWith('--') ? closest(name, Object.keys(spec.options)) : undefined;
  const elsewhere = Object.keys(COMMANDS).filter((c) => c !== cmd && COMMANDS[c].options[name]);
  const hint = near ? ` (did you mean --${near}?)`
    : elsewhere.length ? ` (--${name} is an option of ${elsewhere.join(', ')}, not of ${cmd})`
      : ` (${cmd} takes ${Object.keys(spec.options).map((k) => `--${k}`).join(', ')})`;
  return `unknown option ${raw}${hint}`;
}

function switchProblem(raw: string, value: string | undefined): string | undefined {
  return value === undefined ? undefined : `${raw} is a switch and takes no value (got ${raw}=${value}): write ${raw} alone, or leave it out`;
}

function valueProblem(raw: string, o: OptionSpec, value: string | undefined, inline: boolean | undefined): string | undefined {
  const form = `${raw} ${o.value}`;
  if (value === undefined) return `${raw} needs a value: ${form}`;
  if (!inline && value.startsWith('-') && value !== '-') {
    const glued = raw.startsWith('--') ? `${raw}=${value}` : `${raw}${value}`;
    return `${raw} needs a value, but the next word is the option ${value}: write ${form} (a value that starts with '-' goes as ${glued})`;
  }
  if (value === '') return `${raw} needs a value, got an empty one: ${form}`;
  if (o.choices && !o.choices.includes(value)) return `${raw} must be ${o.choices.join(' or ')}, got '${value}'`;
  return undefined;
}
