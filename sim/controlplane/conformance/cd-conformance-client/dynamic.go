package main

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// The dynamic client's scenarios (JSON bodies): create, list with a label selector, merge and
// JSON patches, delete, on the corpus's Widget custom resource and on a built-in kind.

var widgets = schema.GroupVersionResource{Group: "conformance.example.com", Version: "v1", Resource: "widgets"}

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

func object(apiVersion, kind, name string, labels map[string]any, fields map[string]any) *unstructured.Unstructured {
	content := map[string]any{
		"apiVersion": apiVersion,
		"kind":       kind,
		"metadata":   map[string]any{"name": name, "labels": labels},
	}
	for k, v := range fields {
		content[k] = v
	}
	return &unstructured.Unstructured{Object: content}
}

func dynamicCustomResource(ctx context.Context, e *env) error {
	client := e.dynamic.Resource(widgets).Namespace(e.namespace)
	for _, w := range []struct {
		name, colour string
		size         int64
	}{{"w1", "blue", 3}, {"w2", "green", 5}, {"other", "red", 1}} {
		labels := map[string]any{"corpus": "client-go"}
		if w.name == "other" {
			labels = map[string]any{"corpus": "other"}
		}
		spec := map[string]any{"spec": map[string]any{"size": w.size, "colour": w.colour}}
		created, err := client.Create(ctx, object("conformance.example.com/v1", "Widget", w.name, labels, spec), metav1.CreateOptions{})
		e.record("create widget "+w.name, created, err)
	}
	invalid := object("conformance.example.com/v1", "Widget", "big-red", nil,
		map[string]any{"spec": map[string]any{"size": int64(12), "colour": "red"}})
	_, err := client.Create(ctx, invalid, metav1.CreateOptions{})
	e.record("create a widget its validation rule refuses", nil, err)
	list, err := client.List(ctx, byLabel)
	e.record("list widgets by label", list, err)
	patched, err := client.Patch(ctx, "w1", types.MergePatchType, []byte(`{"spec":{"size":4},"metadata":{"labels":{"patched":"merge"}}}`), metav1.PatchOptions{})
	e.record("merge patch widget", patched, err)
	patched, err = client.Patch(ctx, "w2", types.JSONPatchType, []byte(`[{"op":"replace","path":"/spec/colour","value":"blue"},{"op":"add","path":"/spec/parts","value":[{"name":"bolt","count":2}]}]`), metav1.PatchOptions{})
	e.record("json patch widget", patched, err)
	status, err := client.Patch(ctx, "w2", types.MergePatchType, []byte(`{"status":{"ready":true}}`), metav1.PatchOptions{}, "status")
	e.record("merge patch widget's status subresource", status, err)
	err = client.Delete(ctx, "w1", metav1.DeleteOptions{})
	e.record("delete widget w1", nil, err)
	err = client.DeleteCollection(ctx, metav1.DeleteOptions{}, byLabel)
	e.record("delete the collection of widgets by label", nil, err)
	list, err = client.List(ctx, metav1.ListOptions{})
	e.record("list widgets", list, err)
	return nil
}

func dynamicConfigMap(ctx context.Context, e *env) error {
	client := e.dynamic.Resource(configMaps).Namespace(e.namespace)
	for _, name := range []string{"d1", "d2"} {
		cm := object("v1", "ConfigMap", name, map[string]any{"corpus": "client-go", "name": name},
			map[string]any{"data": map[string]any{"a": "1"}})
		created, err := client.Create(ctx, cm, metav1.CreateOptions{})
		e.record("create configmap "+name, created, err)
	}
	list, err := client.List(ctx, metav1.ListOptions{LabelSelector: "corpus=client-go,name in (d2)"})
	e.record("list configmaps by a set-based selector", list, err)
	patched, err := client.Patch(ctx, "d1", types.StrategicMergePatchType, []byte(`{"data":{"b":"2"}}`), metav1.PatchOptions{})
	e.record("strategic merge patch configmap", patched, err)
	patched, err = client.Patch(ctx, "d1", types.JSONPatchType, []byte(`[{"op":"test","path":"/data/a","value":"9"}]`), metav1.PatchOptions{})
	e.record("json patch configmap whose test fails", patched, err)
	err = client.Delete(ctx, "d1", metav1.DeleteOptions{})
	e.record("delete configmap d1", nil, err)
	err = client.Delete(ctx, "d1", metav1.DeleteOptions{})
	e.record("delete configmap d1 again", nil, err)
	return nil
}
