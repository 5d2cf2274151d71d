// mm-argo-sync runs one sync of Argo CD's gitops-engine (the sync engine Argo CD's application controller
// runs) over a file of manifests, against the cluster of a kubeconfig, and prints what the engine did as JSON
// lines on stdout; the engine's own log goes to stderr.
//
// It drives one sync operation the way Argo CD v3.2's application controller does (controller/sync.go,
// SyncAppState), with the engine's own code: every object carries Argo CD 3's annotation tracking
// (argocd.argoproj.io/tracking-id, "<app>:<group>/<kind>:<namespace>/<name>"); a cluster cache watches the
// cluster; each round reconciles the target objects with the live ones from the cache, builds a sync context
// from the operation's state so far (sync.WithInitialState) with the controller's options, and runs one
// Sync() step, until the operation completes. Hence sync waves from argocd.argoproj.io/sync-wave, a wave
// applied only once the wave before it is healthy (the engine's health checks), the controller's 2 s pause
// after every wave but the last (ARGOCD_SYNC_WAVE_DELAY, --wave-delay), server-side apply with Argo CD's
// field manager when --server-side-apply is set (syncOptions ServerSideApply=true), pruning of tracked
// objects no longer in the file when --prune is set, and health judged as Argo CD judges it: the engine's
// checks plus Argo CD's built-in Lua checks for custom resources (resource_customizations, e.g. a cert-manager
// Certificate is healthy once Ready). (engine.Sync, the engine's own one-call loop, keeps the live objects it
// read before the first step, so an object created in one wave never turns healthy for it and a sync with
// more than one wave never completes.)
//
// Output lines: {"event":"cache-synced"}; {"event":"wave","phase":"Sync","wave":N,"final":bool} each time the
// engine has applied a wave; {"event":"state","phase":...,"message":...} each time the operation's message
// changes (e.g. "waiting for healthy state of apps/Deployment/x"); {"event":"result",...} per resource of the
// operation's result; last {"event":"done","phase":"Succeeded"|"Failed"|"Error","message":...}. Every line
// has "ms", the time since the start. Exit status 0 when the sync succeeded, 1 when it failed, 2 on a usage
// or setup error.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/argoproj/argo-cd/v3/util/lua"
	"github.com/argoproj/gitops-engine/pkg/cache"
	gsync "github.com/argoproj/gitops-engine/pkg/sync"
	"github.com/argoproj/gitops-engine/pkg/sync/common"
	"github.com/argoproj/gitops-engine/pkg/utils/kube"
	"github.com/argoproj/gitops-engine/pkg/utils/tracing"
	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2/textlogger"
)

// trackingAnnotation is Argo CD 3's default resource tracking (annotation based).
const trackingAnnotation = "argocd.argoproj.io/tracking-id"

var (
	start = time.Now()
	outMu sync.Mutex
)

func emit(v map[string]any) {
	v["ms"] = time.Since(start).Milliseconds()
	b, _ := json.Marshal(v)
	outMu.Lock()
	defer outMu.Unlock()
	fmt.Fprintln(os.Stdout, string(b))
}

func fatal(code int, format string, args ...any) {
	emit(map[string]any{"event": "done", "phase": "Error", "message": fmt.Sprintf(format, args...)})
	os.Exit(code)
}

// readManifests reads the multi-document YAML file and marks every object as the Application's.
func readManifests(file, app string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	objs, err := kube.SplitYAML(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	for _, u := range objs {
		a := u.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		k := kube.GetResourceKey(u)
		a[trackingAnnotation] = fmt.Sprintf("%s:%s/%s:%s/%s", app, k.Group, k.Kind, k.Namespace, k.Name)
		u.SetAnnotations(a)
	}
	return objs, nil
}

type options struct {
	app, namespace, revision, manager string
	ssa, prune                        bool
	waveDelay                         time.Duration
}

// operation is what Argo CD keeps in the Application's status.operationState between two steps.
type operation struct {
	phase     common.OperationPhase
	message   string
	results   []common.ResourceSyncResult
	startedAt metav1.Time
}

// step is one round of the controller's SyncAppState: live state from the cache, a sync context from the
// operation so far, one Sync().
func step(config *rest.Config, kubectl kube.Kubectl, cc cache.ClusterCache, objs []*unstructured.Unstructured, o options, op *operation, log logr.Logger) error {
	live, err := cc.GetManagedLiveObjs(objs, func(r *cache.Resource) bool {
		id, _ := r.Info.(string)
		return strings.HasPrefix(id, o.app+":")
	})
	if err != nil {
		return fmt.Errorf("managed live objects: %w", err)
	}
	result := gsync.Reconcile(objs, live, o.namespace, cc)
	foreground := metav1.DeletePropagationForeground
	syncCtx, cleanup, err := gsync.NewSyncContext(o.revision, result, config, config, kubectl, o.namespace, cc.GetOpenAPISchema(),
		gsync.WithLogr(log),
		// Argo CD's own health checks for custom resources (its built-in Lua scripts, no argocd-cm overrides)
		gsync.WithHealthOverride(lua.ResourceHealthOverrides(nil)),
		gsync.WithOperationSettings(false, o.prune, false, false),
		gsync.WithInitialState(op.phase, op.message, op.results, op.startedAt),
		gsync.WithManifestValidation(true),
		gsync.WithSyncWaveHook(func(phase common.SyncPhase, wave int, final bool) error {
			emit(map[string]any{"event": "wave", "phase": string(phase), "wave": wave, "final": final})
			if !final {
				time.Sleep(o.waveDelay)
			}
			return nil
		}),
		gsync.WithPrunePropagationPolicy(&foreground),
		gsync.WithServerSideApply(o.ssa),
		gsync.WithServerSideApplyManager(o.manager),
		gsync.WithClientSideApplyMigration(true, common.DefaultClientSideApplyMigrationManager),
	)
	if err != nil {
		return fmt.Errorf("sync context: %w", err)
	}
	defer cleanup()
	syncCtx.Sync()
	before := op.message
	op.phase, op.message, op.results = syncCtx.GetState()
	if op.message != before {
		emit(map[string]any{"event": "state", "phase": string(op.phase), "message": op.message})
	}
	return nil
}

func main() {
	var o options
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the destination cluster (required)")
	manifests := flag.String("manifests", "", "multi-document YAML file of the Application's rendered manifests (required)")
	flag.StringVar(&o.app, "app", "", "the Application's name, written into each object's tracking annotation (required)")
	flag.StringVar(&o.namespace, "namespace", "default", "namespace for objects that name none (the Application's destination.namespace)")
	flag.StringVar(&o.revision, "revision", "local", "the revision the sync reports")
	flag.BoolVar(&o.ssa, "server-side-apply", false, "server-side apply (syncOptions ServerSideApply=true)")
	flag.StringVar(&o.manager, "field-manager", "argocd-controller", "field manager of server-side apply (Argo CD's)")
	flag.BoolVar(&o.prune, "prune", false, "delete tracked objects that are no longer in the manifests (syncPolicy.automated.prune)")
	flag.DurationVar(&o.waveDelay, "wave-delay", 2*time.Second, "pause after each wave but the last (Argo CD's ARGOCD_SYNC_WAVE_DELAY)")
	timeout := flag.Duration("timeout", 2*time.Minute, "how long the sync may take")
	verbosity := flag.Int("v", 0, "verbosity of the engine's log on stderr")
	flag.Parse()
	if *kubeconfig == "" || *manifests == "" || o.app == "" {
		flag.Usage()
		fatal(2, "--kubeconfig, --manifests and --app are required")
	}
	log := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(*verbosity), textlogger.Output(os.Stderr)))
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fatal(2, "kubeconfig %s: %v", *kubeconfig, err)
	}
	// Argo CD's client rates for a destination cluster (ARGOCD_K8S_CLIENT_QPS, ARGOCD_K8S_CLIENT_BURST)
	config.QPS, config.Burst = 50, 100
	objs, err := readManifests(*manifests, o.app)
	if err != nil {
		fatal(2, "manifests: %v", err)
	}
	kubectl := &kube.KubectlCmd{Log: log, Tracer: tracing.NopTracer{}}
	cc := cache.NewClusterCache(config, cache.SetLogr(log), cache.SetKubectl(kubectl),
		cache.SetPopulateResourceInfoHandler(func(un *unstructured.Unstructured, _ bool) (any, bool) {
			id := un.GetAnnotations()[trackingAnnotation]
			return id, id != ""
		}))
	if err := cc.EnsureSynced(); err != nil {
		fatal(2, "cluster cache: %v", err)
	}
	defer cc.Invalidate()
	emit(map[string]any{"event": "cache-synced"})
	updated := make(chan struct{}, 1)
	unsubscribe := cc.OnResourceUpdated(func(_, _ *cache.Resource, _ map[kube.ResourceKey]*cache.Resource) {
		select {
		case updated <- struct{}{}:
		default:
		}
	})
	defer unsubscribe()

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	op := &operation{phase: common.OperationRunning, startedAt: metav1.Now()}
	for !op.phase.Completed() {
		if err := step(config, kubectl, cc, objs, o, op, log); err != nil {
			op.phase, op.message = common.OperationError, err.Error()
			break
		}
		if op.phase.Completed() {
			break
		}
		select {
		case <-ctx.Done():
			op.phase, op.message = common.OperationFailed, "timed out: "+op.message
		case <-updated:
		case <-time.After(time.Second):
		}
	}
	for _, r := range op.results {
		emit(map[string]any{
			"event": "result", "group": r.ResourceKey.Group, "kind": r.ResourceKey.Kind, "namespace": r.ResourceKey.Namespace,
			"name": r.ResourceKey.Name, "status": string(r.Status), "hookPhase": string(r.HookPhase),
			"syncPhase": string(r.SyncPhase), "message": r.Message,
		})
	}
	emit(map[string]any{"event": "done", "phase": string(op.phase), "message": op.message})
	if op.phase != common.OperationSucceeded {
		os.Exit(1)
	}
}
