package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// protobuf is client-go's media type for built-in kinds' bodies; the typed clients are told
// to use it explicitly, so every create and update body in the corpus is protobuf.
const protobuf = "application/vnd.kubernetes.protobuf"

// transcript is the document printed: the scenario's operations in order.
type transcript struct {
	Steps []op `json:"steps"`
}

// op is one operation's outcome: the HTTP status of its (last) response and the media type of
// the body it sent, and the object it returned, or the API's Status for an error, or the error.
type op struct {
	Op          string   `json:"op"`
	Status      int      `json:"status,omitempty"`
	RequestBody string   `json:"requestBody,omitempty"`
	Object      any      `json:"object,omitempty"`
	Error       *failure `json:"error,omitempty"`
	Result      any      `json:"result,omitempty"`
}

// failure is an error: an API Status (reason, message, details) or any other error (kind).
type failure struct {
	Kind    string                `json:"kind"`
	Code    int32                 `json:"code,omitempty"`
	Reason  metav1.StatusReason   `json:"reason,omitempty"`
	Message string                `json:"message"`
	Details *metav1.StatusDetails `json:"details,omitempty"`
}

// env holds the clients of a scenario and its transcript.
type env struct {
	namespace string
	typed     kubernetes.Interface
	dynamic   dynamic.Interface
	recorder  *recorder
	out       transcript
}

func newEnv(config *rest.Config, namespace string) (*env, error) {
	rec := &recorder{}
	config = rest.CopyConfig(config)
	config.UserAgent = "cd-conformance-client"
	config.QPS, config.Burst = 100, 200
	config.Wrap(func(rt http.RoundTripper) http.RoundTripper { rec.next = rt; return rec })
	typedConfig := rest.CopyConfig(config)
	typedConfig.ContentType = protobuf
	typedConfig.AcceptContentTypes = protobuf + ",application/json"
	typed, err := kubernetes.NewForConfig(typedConfig)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	return &env{namespace: namespace, typed: typed, dynamic: dyn, recorder: rec}, nil
}

// record appends an operation's outcome; obj is what the call returned (nil on error).
func (e *env) record(name string, obj any, err error) {
	status, body := e.recorder.last()
	step := op{Op: name, Status: status, RequestBody: body}
	if err != nil {
		step.Error = describe(err)
	} else {
		step.Object = plain(obj)
	}
	e.out.Steps = append(e.out.Steps, step)
}

// note appends a result that is not one HTTP exchange (an informer's view, a watch's events).
func (e *env) note(name string, result any) {
	e.out.Steps = append(e.out.Steps, op{Op: name, Result: plain(result)})
}

func describe(err error) *failure {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		s := status.Status()
		return &failure{Kind: "Status", Code: s.Code, Reason: s.Reason, Message: s.Message, Details: s.Details}
	}
	return &failure{Kind: "error", Message: err.Error()}
}

// plain is obj as JSON data, with a typed object's apiVersion and kind left out (client-go's
// decoders clear them, from protobuf and JSON alike).
func plain(obj any) any {
	if o, ok := obj.(runtime.Object); ok && o != nil {
		if _, unstructured := o.(runtime.Unstructured); !unstructured {
			o = o.DeepCopyObject()
			o.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
			obj = o
		}
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return map[string]string{"unencodable": err.Error()}
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		return map[string]string{"undecodable": err.Error()}
	}
	return out
}

// recorder is the clients' transport wrapper: it keeps the status of the last response and
// the media type of the last request's body, for the sequential operations of a scenario.
type recorder struct {
	next   http.RoundTripper
	mu     sync.Mutex
	status int
	body   string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if req.Method == http.MethodGet && req.URL.Query().Get("watch") == "true" {
		return resp, err // watches run beside the operations; they are not an operation's outcome
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status, r.body = 0, ""
	if req.Body != nil && req.ContentLength != 0 {
		r.body = req.Header.Get("Content-Type")
	}
	if err == nil {
		r.status = resp.StatusCode
	}
	return resp, err
}

func (r *recorder) last() (int, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status, r.body
}
