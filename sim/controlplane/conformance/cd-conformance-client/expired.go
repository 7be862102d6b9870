package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// relics is the custom resource of the corpus's Relic CRD, made for this scenario alone: its
// storage starts when the CRD is established, so any resourceVersion from before (the
// namespace's) is older than anything the server keeps for it, on kube-apiserver (its watch
// cache begins at the list made when the resource's storage starts; compacting etcd does not
// shorten that history, so it is not how a watch is made to expire) and on the embedded server.
var relics = schema.GroupVersionResource{Group: "conformance.example.com", Version: "v1", Resource: "relics"}

// watchExpired is a watch, and a reflector, from a resourceVersion the server no longer keeps:
// the watch gets 410 Expired ("too old resource version") as an ERROR event; the reflector,
// whose first list claims that resourceVersion, gets the same, lists again and then sees a
// Relic created after.
func watchExpired(ctx context.Context, e *env) error {
	ns, err := e.typed.CoreV1().Namespaces().Get(ctx, e.namespace, metav1.GetOptions{})
	e.record("get the namespace (its resourceVersion is older than the Relics' storage)", nil, err)
	if err != nil {
		return nil
	}
	old := ns.ResourceVersion
	client := e.dynamic.Resource(relics).Namespace(e.namespace)

	w, err := client.Watch(ctx, metav1.ListOptions{ResourceVersion: old})
	if err != nil {
		e.record("watch relics from the namespace's resourceVersion", nil, err)
	} else {
		e.note("watch relics from the namespace's resourceVersion", firstEvents(w, 1))
	}

	lw := &staleListWatch{client: client, stale: old}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	reflector := cache.NewReflectorWithOptions(lw, &unstructured.Unstructured{}, store, cache.ReflectorOptions{Name: "relics"})
	reflectorCtx, stop := context.WithCancel(ctx)
	defer stop()
	go reflector.RunWithContext(reflectorCtx)
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return lw.relisted(), nil
	})
	if err != nil {
		return fmt.Errorf("the reflector did not list again: %w", err)
	}
	created, err := client.Create(ctx, object("conformance.example.com/v1", "Relic", "r1", nil, nil), metav1.CreateOptions{})
	e.record("create relic r1", created, err)
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, ok, _ := store.GetByKey(e.namespace + "/r1")
		return ok, nil
	})
	e.note("reflector", map[string]any{
		"first watch expired":     lw.expiry(),
		"listed again":            lw.relisted(),
		"store has r1 after that": err == nil,
		"store keys":              store.ListKeys(),
	})
	return nil
}

// firstEvents reads up to n events of w (5s at most): each one's type and object.
func firstEvents(w watch.Interface, n int) []map[string]any {
	defer w.Stop()
	var out []map[string]any
	timeout := time.After(5 * time.Second)
	for len(out) < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return append(out, map[string]any{"closed": true})
			}
			out = append(out, map[string]any{"type": ev.Type, "object": plain(ev.Object)})
		case <-timeout:
			return append(out, map[string]any{"timeout": true})
		}
	}
	return out
}

// staleListWatch lists and watches Relics, but its first list answers with a stale
// resourceVersion (as a list served before the history was lost would), so the reflector's
// first watch starts from it. It uses plain list and watch (no watch-list stream).
type staleListWatch struct {
	client interface {
		List(context.Context, metav1.ListOptions) (*unstructured.UnstructuredList, error)
		Watch(context.Context, metav1.ListOptions) (watch.Interface, error)
	}
	stale   string
	mu      sync.Mutex
	lists   int
	expired *metav1.Status
}

func (l *staleListWatch) IsWatchListSemanticsUnSupported() bool { return true }

func (l *staleListWatch) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	list, err := l.client.List(ctx, options)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lists++
	if l.lists == 1 {
		list.SetResourceVersion(l.stale)
	}
	return list, nil
}

func (l *staleListWatch) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	w, err := l.client.Watch(ctx, options)
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
		if ev.Type == watch.Error {
			if status, ok := ev.Object.(*metav1.Status); ok && apierrors.IsResourceExpired(apierrors.FromObject(status)) {
				l.mu.Lock()
				if l.expired == nil {
					l.expired = status
				}
				l.mu.Unlock()
			}
		}
		return ev, true
	}), nil
}

func (l *staleListWatch) relisted() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lists >= 2
}

func (l *staleListWatch) expiry() any {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.expired == nil {
		return nil
	}
	return map[string]any{"code": l.expired.Code, "reason": l.expired.Reason, "message": l.expired.Message}
}

// List and Watch are the context-free forms cache.ListerWatcher still requires.
func (l *staleListWatch) List(options metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), options)
}

func (l *staleListWatch) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), options)
}
