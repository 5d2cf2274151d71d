/**
 * What a cluster evacuation is planned from (issue 51 item 2): each cluster's nodes (allocatable and already
 * requested CPU and memory, labels, whether they take pods) and the VMs of the cluster to drain (size, node,
 * storage classes, networks, labels). The inventory is a document so that the plan is reviewable and
 * reproducible: the same fleet and inventory always give the same moves. Read with the same reader and codes
 * as every other input (src/base/input-file.ts, src/base/yaml-input.ts). Pure, no cdk8s import.
 */
import { z } from 'zod';
import { parseYamlInput } from '../base/yaml-input';
import { readInputText } from '../base/input-file';
import { FleetProblem, FleetValidationError, pathToString } from '../base/errors';

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const label = z.string().max(63).regex(DNS1123_LABEL, { message: 'must be a DNS-1123 label: lowercase letters, digits and "-"' });
const memory = z.string().regex(/^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$/, { message: 'must be a memory quantity such as 16Gi' });
const cpu = z.string().regex(/^[0-9]+(\.[0-9]+)?m?$/, { message: 'must be a CPU quantity such as 4 or 3500m' });
const labels = z.record(z.string(), z.string());

const nodeSchema = z.object({
  name: z.string().min(1),
  /** The node's allocatable CPU and memory (`status.allocatable`). */
  allocatable: z.object({ cpu, memory }).strict(),
  /** What the pods already on the node request. @default - nothing */
  requested: z.object({ cpu, memory }).strict().optional(),
  /** The node's labels (KubeVirt's node labeller adds CPU models and features as labels). @default - none */
  labels: labels.optional(),
  /** False for a cordoned node (`spec.unschedulable`), one not Ready, or one without `kubevirt.io/schedulable: "true"`. @default true */
  schedulable: z.boolean().optional(),
  /** Its `spec.taints` (NoSchedule and NoExecute ones keep a VM off unless it tolerates them). @default - none */
  taints: z.array(z.object({ key: z.string().min(1), value: z.string().optional(), effect: z.enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute']) }).strict()).optional(),
}).strict();

const vmSchema = z.object({
  name: label,
  namespace: label,
  /** The node its VMI runs on. */
  node: z.string().min(1),
  /** The virt-launcher pod's CPU request (the VM's `resources.requests.cpu`, or its vCPUs under the CPU allocation ratio). */
  cpu,
  /** The guest memory (`spec.template.spec.domain.memory.guest` or the memory request). */
  memory,
  /** The VM's CPU limit, where it sets one (multifd is then off). @default - none */
  cpuLimit: cpu.optional(),
  /** vCPUs (KubeVirt's overhead counts 8 MiB per vCPU). @default 1 */
  vcpus: z.number().int().min(1).max(1024).optional(),
  /** Storage classes of its volumes. @default - none */
  storageClasses: z.array(z.string()).optional(),
  /** `namespace/name` of its Multus networks (the pod network needs no entry). @default - none */
  networks: z.array(z.string()).optional(),
  /** Its VMI's labels (`spec.template.metadata.labels`): a move's MigrationPolicy selects by them. @default - none */
  vmiLabels: labels.optional(),
  /** Its `spec.template.spec.nodeSelector`: a target node must carry every one. @default - none */
  nodeSelector: labels.optional(),
  /** `domain.cpu.model`: a named model needs a node labelled `cpu-model.node.kubevirt.io/<model>`. @default - none (host-model) */
  cpuModel: z.string().min(1).optional(),
  /** `domain.cpu.features` (policy `require` or none: node labelled `cpu-feature.node.kubevirt.io/<name>`; `forbid`: not). @default - none */
  cpuFeatures: z.array(z.object({ name: z.string().min(1), policy: z.string().optional() }).strict()).optional(),
  /** `domain.machine.type`: a node labelled `machine-type.node.kubevirt.io/<type>`. @default - none */
  machineType: z.string().min(1).optional(),
  /** `spec.template.spec.tolerations`. @default - none */
  tolerations: z.array(z.object({
    key: z.string().optional(), operator: z.string().optional(), value: z.string().optional(), effect: z.string().optional(),
  }).strict()).optional(),
}).strict();

const clusterSchema = z.object({
  nodes: z.array(nodeSchema).min(1, { message: 'must list at least one node' }),
  /** The VMs of the cluster (needed for the cluster to drain). @default - none */
  vms: z.array(vmSchema).optional(),
}).strict();

export const inventorySchema = z.object({
  apiVersion: z.literal('migrationmesh.dev/v1alpha1', { message: 'must be migrationmesh.dev/v1alpha1' }),
  kind: z.literal('Inventory', { message: 'must be Inventory' }),
  metadata: z.object({ name: label }).strict(),
  /** By cluster name. */
  clusters: z.record(z.string(), clusterSchema),
}).strict();

export type Inventory = z.infer<typeof inventorySchema>;
export type InventoryVm = z.infer<typeof vmSchema>;
export type InventoryNode = z.infer<typeof nodeSchema>;

/** Read an inventory file for the fleet `fleet`: every problem at once with its path, or the document. */
export function loadInventoryFile(file: string, fleet: string): Inventory {
  const text = readInputText(file, 'inventory');
  const r = inventorySchema.safeParse(parseYamlInput(text, file, 'forklift/inventory-syntax', 'inventory', file));
  if (!r.success) {
    const problems: FleetProblem[] = r.error.issues.map((i) => ({ code: 'forklift/inventory-invalid', path: pathToString(i.path) || '(document)', message: i.message }));
    throw new FleetValidationError(problems, file, 'inventory');
  }
  if (r.data.metadata.name !== fleet) {
    throw new FleetValidationError([{ code: 'forklift/inventory-invalid', path: 'metadata.name', message: `'${r.data.metadata.name}' is not the fleet '${fleet}'`, fix: `set metadata.name: ${fleet}` }], file, 'inventory');
  }
  return r.data;
}
