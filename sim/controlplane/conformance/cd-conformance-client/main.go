// Command cd-conformance-client is the conformance corpus's client-go program
// (tests/conformance/corpus_clientgo.py): it runs one scenario of client-go interactions against
// the cluster of $KUBECONFIG, in one namespace, and prints one JSON document to stdout, the
// scenario's operations in order, each with its HTTP outcome and the objects returned. The
// corpus normalises that document (uids, resourceVersions, timestamps, generated names) and
// compares it between kube-apiserver and the embedded API server, so everything printed is
// deterministic: events whose order is not guaranteed are sorted, and what depends on timing
// (informer resyncs, reflector relists) is printed as "seen" booleans, not counts.
//
// Usage: cd-conformance-client -namespace NS SCENARIO
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// scenarios maps a scenario's name to the function that runs it.
var scenarios = map[string]func(context.Context, *env) error{
	"typed-configmap":             typedConfigMap,
	"typed-daemonset":             typedDaemonSet,
	"typed-resourceclaimtemplate": typedResourceClaimTemplate,
	"typed-job":                   typedJob,
	"typed-service":               typedService,
	"dynamic-custom-resource":     dynamicCustomResource,
	"dynamic-configmap":           dynamicConfigMap,
	"informer-resync":             informerResync,
	"apply-conflict":              applyConflict,
	"watch-expired":               watchExpired,
}

func main() {
	namespace := flag.String("namespace", os.Getenv("NAMESPACE"), "the namespace the scenario runs in (env NAMESPACE)")
	timeout := flag.Duration("timeout", 90*time.Second, "how long the scenario may take")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: %s -namespace NS SCENARIO\nscenarios: %s\n",
			os.Args[0], strings.Join(names(), ", "))
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 || *namespace == "" {
		flag.Usage()
		os.Exit(2)
	}
	run, ok := scenarios[flag.Arg(0)]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown scenario %q (valid: %s)\n", flag.Arg(0), strings.Join(names(), ", "))
		os.Exit(2)
	}
	kubeconfig := os.Getenv("KUBECONFIG")
	if kubeconfig == "" {
		fmt.Fprintln(os.Stderr, "KUBECONFIG is not set")
		os.Exit(2)
	}
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "load kubeconfig %s: %v\n", kubeconfig, err)
		os.Exit(1)
	}
	e, err := newEnv(config, *namespace)
	if err != nil {
		fmt.Fprintf(os.Stderr, "make clients: %v\n", err)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := run(ctx, e); err != nil {
		// A scenario's own failure (not an API answer, which is recorded): the transcript so
		// far is still printed, for the comparison to show where it stopped.
		e.out.Steps = append(e.out.Steps, op{Op: "scenario failed", Error: &failure{Kind: "scenario", Message: err.Error()}})
	}
	encoder := json.NewEncoder(os.Stdout)
	encoder.SetIndent("", " ")
	if err := encoder.Encode(e.out); err != nil {
		fmt.Fprintf(os.Stderr, "write the transcript: %v\n", err)
		os.Exit(1)
	}
}

func names() []string {
	out := make([]string, 0, len(scenarios))
	for name := range scenarios {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}
