package main

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
)

// applyConflict is server-side apply through the typed ApplyConfigurations with two field
// managers: the second's apply of a field the first owns conflicts (409 with the conflicts as
// causes), then succeeds with Force; the managedFields are printed after each apply.
func applyConflict(ctx context.Context, e *env) error {
	cms := e.typed.CoreV1().ConfigMaps(e.namespace)
	first := corev1ac.ConfigMap("applied", e.namespace).
		WithLabels(map[string]string{"corpus": "client-go"}).
		WithData(map[string]string{"a": "1", "b": "2"})
	got, err := cms.Apply(ctx, first, metav1.ApplyOptions{FieldManager: "first"})
	e.record("apply configmap as first", got, err)
	second := corev1ac.ConfigMap("applied", e.namespace).WithData(map[string]string{"a": "changed", "c": "3"})
	got, err = cms.Apply(ctx, second, metav1.ApplyOptions{FieldManager: "second"})
	e.record("apply a conflicting configmap as second", got, err)
	got, err = cms.Apply(ctx, second, metav1.ApplyOptions{FieldManager: "second", Force: true})
	e.record("apply it as second with force", got, err)
	again := corev1ac.ConfigMap("applied", e.namespace).WithData(map[string]string{"b": "2"})
	got, err = cms.Apply(ctx, again, metav1.ApplyOptions{FieldManager: "first"})
	e.record("apply configmap as first without the label and a", got, err)

	deployments := e.typed.AppsV1().Deployments(e.namespace)
	labels := map[string]string{"app": "web"}
	deployment := func(replicas int32, image string) *appsv1ac.DeploymentApplyConfiguration {
		return appsv1ac.Deployment("web", e.namespace).WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(replicas).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
			WithTemplate(corev1ac.PodTemplateSpec().WithLabels(labels).WithSpec(corev1ac.PodSpec().
				WithContainers(corev1ac.Container().WithName("main").WithImage(image).WithCommand("sleep", "3600")))))
	}
	dep, err := deployments.Apply(ctx, deployment(0, "busybox:1.36"), metav1.ApplyOptions{FieldManager: "first"})
	e.record("apply deployment as first", onlyApplied(dep), err)
	scale := appsv1ac.Deployment("web", e.namespace).WithSpec(appsv1ac.DeploymentSpec().WithReplicas(0).
		WithTemplate(corev1ac.PodTemplateSpec().WithSpec(corev1ac.PodSpec().
			WithContainers(corev1ac.Container().WithName("main").WithImage("busybox:1.37")))))
	dep, err = deployments.Apply(ctx, scale, metav1.ApplyOptions{FieldManager: "second"})
	e.record("apply a deployment whose image conflicts as second", onlyApplied(dep), err)
	return nil
}

// onlyApplied is a Deployment without what its controller writes beside the appliers (the
// status, its own managedFields entry): when that lands is a matter of timing.
func onlyApplied(d *appsv1.Deployment) *appsv1.Deployment {
	if d == nil {
		return nil
	}
	d = d.DeepCopy()
	d.Status = appsv1.DeploymentStatus{}
	kept := d.ManagedFields[:0]
	for _, entry := range d.ManagedFields {
		if entry.Manager == "first" || entry.Manager == "second" {
			kept = append(kept, entry)
		}
	}
	d.ManagedFields = kept
	delete(d.Annotations, "deployment.kubernetes.io/revision")
	return d
}
