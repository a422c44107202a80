#!/usr/bin/env bash
# `make images`: builds the kdns container images from images/Dockerfile with docker or
# podman. Without a working container engine it says so and exits 0 (CI has none).
#
#   images/build.sh                      kdns/{kubedns,cache,sidecar,frontend-cache,tools}:<version>
#   KDNS_REGISTRY=registry.example.com/kdns KDNS_TAG=0.1.0-rc1 images/build.sh
#   KDNS_IMAGES="kubedns cache" images/build.sh
#   KDNS_CONTAINER_ENGINE=podman images/build.sh
#
# The build context is a temporary copy of the sources the Dockerfile needs (never build/,
# which holds gigabytes of objects). <version> is common/base/version.h's.
set -euo pipefail
cd "$(dirname "$0")/.."

engine=${KDNS_CONTAINER_ENGINE:-}
if [[ -z $engine ]]; then
  for candidate in docker podman; do
    command -v "$candidate" >/dev/null 2>&1 || continue
    if "$candidate" info >/dev/null 2>&1; then
      engine=$candidate
      break
    fi
    echo "images: $candidate is installed but not usable ('$candidate info' failed: is its daemon running?)"
  done
fi
if [[ -z $engine ]]; then
  echo "images: no working container engine (docker or podman): no image built"
  exit 0
fi

registry=${KDNS_REGISTRY:-kdns}
version=$(sed -n 's/.*kVersion\[\] = "\(.*\)";.*/\1/p' common/base/version.h)
tag=${KDNS_TAG:-$version}
images=${KDNS_IMAGES:-kubedns cache sidecar frontend-cache tools}

context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
cp -r Makefile common frontend-cache kubedns nanny sidecar "$context"/
mkdir "$context/images"
cp images/Dockerfile images/runtime-packages.sh "$context/images/"
mkdir "$context/tools"
cp tools/check_flags.py tools/corefile2kdns "$context/tools/"

for image in $images; do
  echo "images: building $registry/$image:$tag with $engine"
  "$engine" build -f "$context/images/Dockerfile" --target "$image" \
    -t "$registry/$image:$tag" "$context"
done

echo "images: built $(for image in $images; do printf '%s ' "$registry/$image:$tag"; done)"
echo "images: point manifests/kustomization.yaml's images: at them if the registry is not kdns/"
