#!/bin/sh
# kube-apiserver from the Kubernetes source Debian ships (its `kubernetes` source package, of which Debian builds
# kubectl only), built with Debian's Go in GOPATH mode, as Kubernetes 1.20's own build does: for
# tests/kube_record.py, which records its answers (`make kube-recordings`). Needs Debian's golang-go, etcd-server
# and curl; writes the binary to $1 (default .cache/kube-apiserver).
set -eu
source_version="1.20.5+really1.20.2"
out="$(realpath -m "${1:-.cache/kube-apiserver}")"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "amlemu: fetching Kubernetes ${source_version} source from ${mirror}" >&2
curl -fsSL "${mirror}/pool/main/k/kubernetes/kubernetes_${source_version}.orig.tar.gz" | tar xz -C "$work"
mkdir -p "$work/gopath/src/k8s.io" "$(dirname "$out")"
ln -s "$work"/kubernetes-* "$work/gopath/src/k8s.io/kubernetes"
echo "amlemu: building kube-apiserver (several minutes)" >&2
cd "$work/gopath/src/k8s.io/kubernetes"
export GO111MODULE=off GOPATH="$work/gopath" GOCACHE="${GOCACHE:-$HOME/.cache/go-build}"
# The OpenAPI definitions are generated at build time, as Makefile.generated_files does (for the kube-apiserver's own
# API groups: every package tagged +k8s:openapi-gen, but the code generator's and the sample apiserver's).
go build -o "$work/openapi-gen" k8s.io/kubernetes/vendor/k8s.io/kube-openapi/cmd/openapi-gen
tagged="$( (find . -path ./staging -prune -o -path ./vendor -prune -o -type f -name '*.go' -print
            find -L ./vendor -type f -name '*.go' -print) \
    | xargs grep -l '^// *+k8s:' | xargs grep -l '+k8s:openapi-gen=' \
    | grep -v '^./vendor/k8s.io/code-generator/\|^./vendor/k8s.io/sample-apiserver/' \
    | xargs -n1 dirname | sed 's|^\./|k8s.io/kubernetes/|' | LC_ALL=C sort -u | paste -sd, -)"
"$work/openapi-gen" -i "$tagged" -p k8s.io/kubernetes/pkg/generated/openapi -O zz_generated.openapi \
    -h vendor/k8s.io/code-generator/hack/boilerplate.go.txt -r "$work/openapi-violations.report"
# Its version, as hack/lib/version.sh stamps it (the source's own commit is in it already).
release="$(echo "$source_version" | sed 's/.*really//')"
stamp=""
for package in k8s.io/kubernetes/vendor/k8s.io/component-base/version k8s.io/kubernetes/vendor/k8s.io/client-go/pkg/version; do
    stamp="$stamp -X $package.gitVersion=v$release -X $package.gitMajor=1 -X $package.gitMinor=20"
    stamp="$stamp -X $package.gitTreeState=clean"
done
go build -ldflags "$stamp" -o "$out" k8s.io/kubernetes/cmd/kube-apiserver
"$out" --version
