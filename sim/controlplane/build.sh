#!/usr/bin/env bash
# Builds the real control plane that go.mod pins (kube-apiserver, kube-controller-manager,
# kube-scheduler, etcd) into a per-version cache outside the source tree, and prints that
# folder. Nothing is rebuilt while the folder's stamp matches the hash of the module's inputs.
# Usage: build.sh [--print-dir]   (--print-dir: print the folder, build nothing)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"

version_of() {  # the version go.mod requires of module $1
  awk -v m="$1" '$1 == m && $2 ~ /^v/ { print $2; exit }' go.mod
}
kube="$(version_of k8s.io/kubernetes)"
etcd="$(version_of go.etcd.io/etcd/server/v3)"
cache="${COMPUTEDOMAIN_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/computedomain}"
dir="$cache/kube-$kube-etcd-$etcd/bin"
if [ "${1:-}" = --print-dir ]; then echo "$dir"; exit 0; fi

stamp="$(cat go.mod go.sum build.sh cmd/*/main.go | sha256sum | cut -d' ' -f1)"
if [ -f "$dir/.stamp" ] && [ "$(cat "$dir/.stamp")" = "$stamp" ]; then
  echo "$dir"; exit 0
fi

# The version the binaries report (GET /version, --version), as upstream's release builds set it.
minor="${kube#v1.}"; minor="${minor%%.*}"
x=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  x+=" -X $pkg.gitVersion=$kube -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  x+=" -X $pkg.gitTreeState=clean"
done

mkdir -p "$dir"
rm -f "$dir/.stamp"
echo "building kubernetes $kube and etcd $etcd into $dir (the first build takes long)" >&2
# One `go build` of all four: the packages they share compile once.
CGO_ENABLED=0 go build -trimpath -ldflags="-s -w$x" -o "$dir/" ./cmd/...
echo "$stamp" > "$dir/.stamp"
echo "$dir"
