#!/usr/bin/env bash
# `make images`: builds the kdns container images from images/Dockerfile with docker or
# podman. Without a working container engine it says so and exits 0 (CI has none).
#
#   images/build.sh                      kdns/{kubedns,cache,sidecar,frontend-cache,tools}:<version>
#   KDNS_REGISTRY=registry.example.com/kdns images/build.sh
#   KDNS_IMAGES="kubedns cache" images/build.sh
#   KDNS_CONTAINER_ENGINE=podman images/build.sh
#   KDNS_ALLOW_DIRTY=1 images/build.sh   uncommitted changes: tagged <version>-dirty, warned
#
# <version> is mk/version.sh's, the one the binaries report: git describe (0.2.0 on the
# commit tagged v0.2.0, 0.2.0-3-gabc1234 after it). It is the only tag, so one tag always
# names one commit's build; a release is a git tag (docs/releasing.md). A tree with
# uncommitted changes is refused: its images could not be told from the commit's.
#
# The build context is a temporary copy of the sources the Dockerfile needs (never build/,
# which holds gigabytes of objects, nor .git): the version and commit go in as build args.
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(mk/version.sh)
revision=$(mk/version.sh --revision)
if [[ $version == *-dirty ]]; then
  if [[ ${KDNS_ALLOW_DIRTY:-} != 1 ]]; then
    echo "images: refusing to build from uncommitted changes (version $version): commit" \
      "them, or KDNS_ALLOW_DIRTY=1 for images tagged $version" >&2
    exit 1
  fi
  echo "images: WARNING: building uncommitted changes as $version: no commit reproduces" \
    "these images; never push them" >&2
fi

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
tag=$version
images=${KDNS_IMAGES:-kubedns cache sidecar frontend-cache tools}

context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
cp -r Makefile common frontend-cache kubedns nanny sidecar "$context"/
mkdir "$context/images" "$context/mk"
cp images/Dockerfile images/runtime-packages.sh "$context/images/"
cp mk/version.sh "$context/mk/"
mkdir "$context/tools"
cp tools/check_flags.py tools/corefile2kdns "$context/tools/"

for image in $images; do
  echo "images: building $registry/$image:$tag with $engine"
  "$engine" build -f "$context/images/Dockerfile" --target "$image" \
    --build-arg KDNS_VERSION="$version" --build-arg KDNS_REVISION="$revision" \
    -t "$registry/$image:$tag" "$context"
done

echo "images: built $(for image in $images; do printf '%s ' "$registry/$image:$tag"; done)"
echo "images: point manifests/kustomization.yaml's images: at them if the registry is not kdns/;"
echo "images: the manifests ship only released versions (a v<version> tag: docs/releasing.md)"
