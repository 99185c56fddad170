#!/bin/sh
# The version of ckegen's binaries and the tag of its image (Makefile:
# VERSION; docs/install.md, "Versions"): the tag on HEAD when it names a
# release, v0.MINOR.PATCH exactly (no leading zeros, no suffix), and
# "devel" for everything else: no git, no tag on HEAD, a tag of another
# form (v1.0.0, v0.2.0-rc.1, v0.2). With several release tags on HEAD, the
# highest. Run from the repository (make runs it in its directory).
set -u
version=devel
for tag in $(git tag --points-at HEAD --sort=-version:refname 2>/dev/null); do
	if printf '%s\n' "$tag" | grep -Eqx 'v0\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)'; then
		version=$tag
		break
	fi
done
printf '%s\n' "$version"
