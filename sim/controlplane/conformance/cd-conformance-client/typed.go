package main

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// The typed clients' scenarios: create, get, update, list by label and delete of built-in
// kinds, every body protobuf. Updates of kinds a controller writes too (its status) retry on a
// conflict, as a controller would; only the final outcome is recorded.

func meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Labels: map[string]string{"corpus": "client-go"}}
}

var byLabel = metav1.ListOptions{LabelSelector: "corpus=client-go"}

func typedConfigMap(ctx context.Context, e *env) error {
	client := e.typed.CoreV1().ConfigMaps(e.namespace)
	cm, err := client.Create(ctx, &corev1.ConfigMap{ObjectMeta: meta("cm"), Data: map[string]string{"a": "1"}}, metav1.CreateOptions{})
	e.record("create configmap", cm, err)
	if err != nil {
		return nil
	}
	got, err := client.Get(ctx, "cm", metav1.GetOptions{})
	e.record("get configmap", got, err)
	if err != nil {
		return nil
	}
	got.Data["b"] = "2"
	got.BinaryData = map[string][]byte{"bin": {0, 1, 2}}
	updated, err := client.Update(ctx, got, metav1.UpdateOptions{FieldManager: "updater"})
	e.record("update configmap", updated, err)
	stale := cm.DeepCopy()
	stale.Data["c"] = "3"
	_, err = client.Update(ctx, stale, metav1.UpdateOptions{})
	e.record("update configmap from a stale resourceVersion", nil, err)
	list, err := client.List(ctx, byLabel)
	e.record("list configmaps by label", list, err)
	err = client.Delete(ctx, "cm", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cm.UID}})
	e.record("delete configmap with a uid precondition", nil, err)
	_, err = client.Get(ctx, "cm", metav1.GetOptions{})
	e.record("get the deleted configmap", nil, err)
	return nil
}

func typedDaemonSet(ctx context.Context, e *env) error {
	client := e.typed.AppsV1().DaemonSets(e.namespace)
	labels := map[string]string{"app": "ds"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: meta("ds"),
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					// No node has this label: the DaemonSet runs no pods.
					NodeSelector: map[string]string{"conformance.example.com/none": "true"},
					Containers:   []corev1.Container{{Name: "main", Image: "busybox", Command: []string{"sleep", "3600"}}},
				},
			},
		},
	}
	created, err := client.Create(ctx, ds, metav1.CreateOptions{})
	e.record("create daemonset", created, err)
	if err != nil {
		return nil
	}
	got, err := client.Get(ctx, "ds", metav1.GetOptions{})
	e.record("get daemonset", got, err)
	var updated *appsv1.DaemonSet
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := client.Get(ctx, "ds", metav1.GetOptions{})
		if err != nil {
			return err
		}
		current.Spec.Template.Spec.Containers[0].Image = "busybox:1.36"
		updated, err = client.Update(ctx, current, metav1.UpdateOptions{})
		return err
	})
	e.record("update daemonset's image", updated, err)
	list, err := client.List(ctx, byLabel)
	e.record("list daemonsets by label", list, err)
	err = client.Delete(ctx, "ds", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	e.record("delete daemonset", nil, err)
	return nil
}

func typedResourceClaimTemplate(ctx context.Context, e *env) error {
	client := e.typed.ResourceV1().ResourceClaimTemplates(e.namespace)
	template := &resourcev1.ResourceClaimTemplate{
		ObjectMeta: meta("rct"),
		Spec: resourcev1.ResourceClaimTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"claim": "from-template"}},
			Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
				Requests: []resourcev1.DeviceRequest{{
					Name:    "channel",
					Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "compute-domain-default-channel.nvidia.com"},
				}},
			}},
		},
	}
	created, err := client.Create(ctx, template, metav1.CreateOptions{})
	e.record("create resourceclaimtemplate", created, err)
	if err != nil {
		return nil
	}
	got, err := client.Get(ctx, "rct", metav1.GetOptions{})
	e.record("get resourceclaimtemplate", got, err)
	if err != nil {
		return nil
	}
	got.Labels["changed"] = "yes"
	updated, err := client.Update(ctx, got, metav1.UpdateOptions{})
	e.record("update resourceclaimtemplate's labels", updated, err)
	list, err := client.List(ctx, byLabel)
	e.record("list resourceclaimtemplates by label", list, err)
	err = client.Delete(ctx, "rct", metav1.DeleteOptions{})
	e.record("delete resourceclaimtemplate", nil, err)
	return nil
}

func typedJob(ctx context.Context, e *env) error {
	client := e.typed.BatchV1().Jobs(e.namespace)
	job := &batchv1.Job{
		ObjectMeta: meta("job"),
		Spec: batchv1.JobSpec{
			Suspend: ptr.To(true), // no pods: the Job is only stored
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy:                 corev1.RestartPolicyNever,
				TerminationGracePeriodSeconds: ptr.To[int64](5),
				Containers:                    []corev1.Container{{Name: "main", Image: "busybox", Command: []string{"true"}}},
			}},
		},
	}
	created, err := client.Create(ctx, job, metav1.CreateOptions{})
	e.record("create suspended job", created, err)
	if err != nil {
		return nil
	}
	got, err := client.Get(ctx, "job", metav1.GetOptions{})
	e.record("get job", got, err)
	var updated *batchv1.Job
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := client.Get(ctx, "job", metav1.GetOptions{})
		if err != nil {
			return err
		}
		current.Labels["updated"] = "yes"
		updated, err = client.Update(ctx, current, metav1.UpdateOptions{})
		return err
	})
	e.record("update job's labels", updated, err)
	list, err := client.List(ctx, byLabel)
	e.record("list jobs by label", list, err)
	err = client.Delete(ctx, "job", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)})
	e.record("delete job in the foreground", nil, err)
	return nil
}

func typedService(ctx context.Context, e *env) error {
	client := e.typed.CoreV1().Services(e.namespace)
	svc := &corev1.Service{
		ObjectMeta: meta("svc"),
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80}},
		},
	}
	created, err := client.Create(ctx, svc, metav1.CreateOptions{})
	e.record("create service", created, err)
	if err != nil {
		return nil
	}
	got, err := client.Get(ctx, "svc", metav1.GetOptions{})
	e.record("get service", got, err)
	if err != nil {
		return nil
	}
	got.Spec.Ports = append(got.Spec.Ports, corev1.ServicePort{Name: "https", Port: 443})
	updated, err := client.Update(ctx, got, metav1.UpdateOptions{})
	e.record("update service's ports", updated, err)
	list, err := client.List(ctx, byLabel)
	e.record("list services by label", list, err)
	err = client.Delete(ctx, "svc", metav1.DeleteOptions{})
	e.record("delete service", nil, err)
	return nil
}
