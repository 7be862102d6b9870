package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// informerResync runs a SharedInformerFactory's ConfigMap informer (1s resync, the scenario's
// label only) while ConfigMaps are added, one updated and one deleted, and waits for every
// event and a resync after them. The handler's view is printed sorted, resyncs (updates whose
// resourceVersion did not change) as a "seen" boolean, with the lister's contents at the end.
func informerResync(ctx context.Context, e *env) error {
	factory := informers.NewSharedInformerFactoryWithOptions(e.typed, time.Second,
		informers.WithNamespace(e.namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "corpus=client-go" }))
	informer := factory.Core().V1().ConfigMaps()
	seen := &handlerView{}
	if _, err := informer.Informer().AddEventHandler(seen); err != nil {
		return fmt.Errorf("add the event handler: %w", err)
	}
	client := e.typed.CoreV1().ConfigMaps(e.namespace)
	before := &corev1.ConfigMap{ObjectMeta: meta("before"), Data: map[string]string{"a": "0"}}
	created, err := client.Create(ctx, before, metav1.CreateOptions{})
	e.record("create configmap before the informer starts", created, err)

	factory.Start(ctx.Done())
	defer factory.Shutdown()
	all := true
	for _, ok := range factory.WaitForCacheSync(ctx.Done()) {
		all = all && ok
	}
	e.note("informer synced", all)

	for _, name := range []string{"a", "b"} {
		cm := &corev1.ConfigMap{ObjectMeta: meta(name), Data: map[string]string{"a": "1"}}
		created, err := client.Create(ctx, cm, metav1.CreateOptions{})
		e.record("create configmap "+name, created, err)
	}
	updated, err := client.Update(ctx, &corev1.ConfigMap{ObjectMeta: meta("a"), Data: map[string]string{"a": "2"}}, metav1.UpdateOptions{})
	e.record("update configmap a", updated, err)
	err = client.Delete(ctx, "b", metav1.DeleteOptions{})
	e.record("delete configmap b", nil, err)

	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return seen.done(), nil
	})
	e.note("handler saw", seen.view(err == nil))
	cached, err := informer.Lister().ConfigMaps(e.namespace).List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list from the lister: %w", err)
	}
	contents := map[string]map[string]string{}
	for _, cm := range cached {
		contents[cm.Name] = cm.Data
	}
	e.note("lister contents", contents)
	return nil
}

// handlerView is the informer's event handler: what it saw, by kind of event.
type handlerView struct {
	mu      sync.Mutex
	adds    []string
	updates []string // name: old data -> new data, for changes
	deletes []string
	resyncs int // after the deletion was seen
}

func (h *handlerView) OnAdd(obj any, _ bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.adds = append(h.adds, obj.(*corev1.ConfigMap).Name)
}

func (h *handlerView) OnUpdate(oldObj, newObj any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	old, cm := oldObj.(*corev1.ConfigMap), newObj.(*corev1.ConfigMap)
	if old.ResourceVersion == cm.ResourceVersion {
		if len(h.deletes) > 0 {
			h.resyncs++
		}
		return
	}
	h.updates = append(h.updates, fmt.Sprintf("%s: %v -> %v", cm.Name, old.Data, cm.Data))
}

func (h *handlerView) OnDelete(obj any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	h.deletes = append(h.deletes, obj.(*corev1.ConfigMap).Name)
}

func (h *handlerView) done() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.adds) >= 3 && len(h.updates) >= 1 && len(h.deletes) >= 1 && h.resyncs > 0
}

func (h *handlerView) view(complete bool) map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	adds := append([]string(nil), h.adds...)
	sort.Strings(adds)
	return map[string]any{
		"adds":                           adds,
		"updates":                        h.updates,
		"deletes":                        h.deletes,
		"a resync seen after the delete": h.resyncs > 0,
		"all seen within 30s":            complete,
	}
}
