#!/usr/bin/env bash
# The release's artifacts (docs/install.md, RELEASE.md): run by the
# Makefile's release and release-check targets, which set the environment
# below. Every artifact is made of the commit alone: the binaries are
# built -trimpath with the Makefile's stamped -ldflags, every time stamp is
# SOURCE_DATE_EPOCH (the commit's time), the archives list their entries
# sorted with owner root and fixed modes, and gzip records no name or time.
#
#   release.sh binaries ARCH DIR   ckegen, ckegenctl and cke for linux/ARCH into DIR
#   release.sh package ARCH DIR    from DIR's binaries: the .tar.gz, the .deb and the SBOMs
#   release.sh image ARCH DIR      from DIR's binaries: the image as an OCI archive
#   release.sh sums                SHA256SUMS of everything in DIST
#   release.sh check ARCH          make release-check (below)
#
# Environment: VERSION (v0.MINOR.PATCH or devel), REVISION, LDFLAGS,
# SOURCE_DATE_EPOCH, DIST, CKE_VERSION, GO, NFPM, CYCLONEDX_GOMOD, and for
# image CONTAINER_ENGINE, IMAGE_LICENSE and CA_BUNDLE. Run from the
# repository's top directory.
set -euo pipefail

: "${VERSION:?}" "${REVISION:?}" "${LDFLAGS:?}" "${SOURCE_DATE_EPOCH:?}" "${CKE_VERSION:?}"
GO=${GO:-go}
export SOURCE_DATE_EPOCH TZ=UTC LC_ALL=C

# The version without its v, as file names and Debian's Version have it;
# devel builds are 0.0.0~devel (lower than any release for dpkg).
pkgversion() {
	case $VERSION in
	v*.*.*) printf '%s\n' "${VERSION#v}" ;;
	*) printf '0.0.0~%s\n' "$VERSION" ;;
	esac
}

# The archive's directory and file name: the version, the CKE release cke
# is built on, the platform.
archive_name() {
	printf 'ckegen_%s_cke-%s_linux_%s\n' "$(pkgversion)" "${CKE_VERSION#v}" "$1"
}

# tar_sorted DIR OUT: DIR's content (its name as the top entry) as a
# gzipped tar, entries sorted, owned by 0:0, mtime SOURCE_DATE_EPOCH.
tar_sorted() {
	local dir=$1 out=$2
	tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
		--format=gnu -C "$(dirname "$dir")" -cf - "$(basename "$dir")" | gzip -n -9 >"$out"
}

cmd_binaries() {
	local arch=$1 out
	out=$(mkdir -p "$2" && cd "$2" && pwd)
	CGO_ENABLED=0 GOOS=linux GOARCH="$arch" "$GO" build -trimpath -buildvcs=false \
		-ldflags "$LDFLAGS" -o "$out/" ./cmd/ckegen ./cmd/ckegenctl
	(cd ckeserver && CGO_ENABLED=0 GOOS=linux GOARCH="$arch" "$GO" build -trimpath -buildvcs=false \
		-ldflags "$LDFLAGS" -o "$out/cke" ./cmd/cke)
}

# The archive: the three binaries, the LICENSE and the README.
archive() {
	local arch=$1 bin=$2 work=$3 name
	name=$(archive_name "$arch")
	mkdir -p "$work/$name"
	install -m 0755 "$bin/ckegen" "$bin/ckegenctl" "$bin/cke" "$work/$name/"
	install -m 0644 LICENSE README.md "$work/$name/"
	tar_sorted "$work/$name" "$DIST/$name.tar.gz"
}

# debian_changelog: the package's changelog.gz, in Debian's format (a
# native package's), pointing at CHANGELOG.md for what changed.
debian_changelog() {
	local out=$1 date
	date=$(date -u -R -d "@$SOURCE_DATE_EPOCH")
	printf '%s\n' "ckegen ($(pkgversion)) unstable; urgency=medium" "" \
		"  * ckegen $VERSION, cke built on CKE $CKE_VERSION." \
		"    Commit $REVISION." \
		"    What changed: CHANGELOG.md in ckegen's repository." "" \
		" -- ckegen developers <ckegen@users.noreply.github.com>  $date" >"$out.txt"
	gzip -n -9 -c "$out.txt" >"$out"
	rm "$out.txt"
}

# The .deb (deploy/nfpm.yaml): the binaries in /usr/bin, so the units
# deploy/systemd/ has for a copy in /usr/local/bin get that path here.
deb() {
	local arch=$1 bin=$2 work=$3 stage=$3/deb unit
	mkdir -p "$stage/units"
	for unit in ckegen.service cke.service; do
		sed 's#/usr/local/bin/#/usr/bin/#g' "deploy/systemd/$unit" >"$stage/units/$unit"
		if grep -q /usr/local/bin "$stage/units/$unit"; then
			echo "release: $unit still names /usr/local/bin" >&2
			exit 1
		fi
	done
	debian_changelog "$stage/changelog.gz"
	install -m 0755 "$bin/ckegen" "$bin/ckegenctl" "$bin/cke" deploy/debian/postinst "$stage/"
	install -m 0644 deploy/debian/copyright deploy/debian/lintian-overrides deploy/systemd/ckegen.env "$stage/"
	(cd "$stage" && PKG_VERSION=$(pkgversion) PKG_ARCH=$arch \
		"${NFPM:?}" package --config "$OLDPWD/deploy/nfpm.yaml" --packager deb \
		--target "$DIST/ckegen_$(pkgversion)_$arch.deb" >/dev/null)
}

# A CycloneDX SBOM per binary, read from the binary's build information:
# no serial number and no time stamp, so that it is the binary's alone.
sboms() {
	local arch=$1 bin=$2 f
	for f in ckegen ckegenctl cke; do
		"${CYCLONEDX_GOMOD:?}" bin -json -noserial -notimestamp -version "$VERSION" \
			-output "$DIST/${f}_$(pkgversion)_linux_$arch.cdx.json" "$bin/$f" 2>/dev/null
	done
}

cmd_package() {
	local arch=$1 bin work
	bin=$(cd "$2" && pwd)
	work=$(mktemp -d)
	trap 'rm -rf "$work"' RETURN
	mkdir -p "${DIST:?}"
	DIST=$(cd "$DIST" && pwd)
	archive "$arch" "$bin" "$work"
	deb "$arch" "$bin" "$work"
	sboms "$arch" "$bin"
}

# stage_image BIN DIR: the build context as the Makefile's image target
# lays it out, every file's time the commit's.
stage_image() {
	local bin=$1 stage=$2
	mkdir -p "$stage/lib" "$stage/state/ckegen"
	install -m 0755 "$bin/ckegen" "$bin/ckegenctl" "$bin/cke" "$stage/"
	install -m 0644 deploy/image/passwd deploy/image/group LICENSE "$stage/"
	install -m 0644 "$CA_BUNDLE" "$stage/ca-certificates.crt"
	chmod 0755 "$stage/lib"
	chmod 0700 "$stage/state/ckegen"
	chown 10000:10000 "$stage/state/ckegen" 2>/dev/null || true
	find "$stage" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
}

# The image as `make image` builds it, for linux/ARCH, with every time
# stamp the commit's; saved as an OCI archive, then written again as a
# sorted tar with fixed times (what podman save writes is the same content
# in an order of its own).
cmd_image() {
	local arch=$1 bin work tag
	bin=$(cd "$2" && pwd)
	: "${CONTAINER_ENGINE:?}" "${CA_BUNDLE:?}"
	work=$(mktemp -d)
	trap 'rm -rf "$work"' RETURN
	tag="localhost/ckegen:$VERSION"
	stage_image "$bin" "$work/stage"
	"$CONTAINER_ENGINE" build --quiet --platform "linux/$arch" --timestamp "$SOURCE_DATE_EPOCH" \
		--file Containerfile --build-arg VERSION="$VERSION" --build-arg LICENSE="${IMAGE_LICENSE:-Apache-2.0}" \
		--tag "$tag" "$work/stage" >/dev/null
	"$CONTAINER_ENGINE" save --format oci-archive --output "$work/image.tar" "$tag" >/dev/null
	"$CONTAINER_ENGINE" rmi "$tag" >/dev/null
	mkdir "$work/oci"
	tar -C "$work/oci" -xf "$work/image.tar"
	tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner --format=gnu \
		-C "$work/oci" -cf "$DIST/ckegen_$(pkgversion)_linux_${arch}.oci.tar" .
}

# check ARCH: make release-check. The binaries twice, the second time
# ckegen and ckegenctl with an empty Go build cache (a cache hit proves
# nothing; cke's dependencies, Kubernetes' among them, take most of the
# cold build, and are built from the warm cache), compared byte for byte;
# then the first build's archive, .deb and SBOMs, checked by deploy/'s
# release tests.
cmd_check() {
	local arch=$1 work cache f start
	work=$(mktemp -d)
	cache=$(mktemp -d)
	trap 'chmod -R u+w "$cache" 2>/dev/null; rm -rf "$work" "$cache"' RETURN
	start=$(date +%s)
	cmd_binaries "$arch" "$work/a"
	mkdir -p "$work/b"
	GOCACHE=$cache CGO_ENABLED=0 GOOS=linux GOARCH="$arch" "$GO" build -trimpath -buildvcs=false \
		-ldflags "$LDFLAGS" -o "$work/b/" ./cmd/ckegen ./cmd/ckegenctl
	(cd ckeserver && CGO_ENABLED=0 GOOS=linux GOARCH="$arch" "$GO" build -trimpath -buildvcs=false \
		-ldflags "$LDFLAGS" -o "$work/b/cke" ./cmd/cke)
	for f in ckegen ckegenctl cke; do
		if ! cmp -s "$work/a/$f" "$work/b/$f"; then
			echo "release-check: $f differs between two builds of the same commit (the second with an empty build cache for ckegen and ckegenctl): the release would not be reproducible" >&2
			exit 1
		fi
	done
	echo "release-check: ckegen, ckegenctl and cke are the same bytes in two builds ($(( $(date +%s) - start ))s)"
	DIST=$work/dist cmd_package "$arch" "$work/a"
	DIST=$work/dist cmd_sums
	RELEASE_DIST=$work/dist RELEASE_VERSION=$VERSION RELEASE_REVISION=$REVISION RELEASE_ARCH=$arch \
		"$GO" test -tags releasecheck -count=1 -run '^TestRelease' ./deploy/
	echo "release-check: done in $(( $(date +%s) - start ))s"
}

cmd_sums() {
	(cd "$DIST" && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%P\n' | sort | xargs sha256sum >SHA256SUMS)
}

case ${1:-} in
binaries | package | image)
	[ $# -eq 3 ] || { echo "usage: release.sh $1 ARCH DIR" >&2; exit 2; }
	"cmd_$1" "$2" "$3"
	;;
sums) cmd_sums ;;
check)
	[ $# -eq 2 ] || { echo "usage: release.sh check ARCH" >&2; exit 2; }
	cmd_check "$2"
	;;
*)
	echo "usage: release.sh binaries|package|image ARCH DIR, or release.sh sums" >&2
	exit 2
	;;
esac
