package programs

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/ckegen/ckegen/internal/testutil/buildcache"
)

// OpenBaoVersion is the release of OpenBao (the Vault fork under MPL-2.0,
// with Vault's HTTP API and CLI) built as the tests' Vault, which CKE's
// server needs before it calls its integration with a cluster status.
const OpenBaoVersion = "v2.6.2"

// Environment variables that steer OpenBao's build.
const (
	// EnvOpenBao names a bao binary to use instead of building one.
	EnvOpenBao = "CKEGEN_OPENBAO"
	// EnvOpenBaoCache is where the built binaries and the unpacked source
	// are kept; default $XDG_CACHE_HOME/ckegen/openbao.
	EnvOpenBaoCache = "CKEGEN_OPENBAO_CACHE"
)

// OpenBaoBuildTimeout bounds OpenBao's build: cold, with its modules'
// download, it takes about 19 minutes on 2 shared cores, several times
// the other programs.
const OpenBaoBuildTimeout = 45 * time.Minute

// OpenBaoSource is the archive of OpenBao's source, beside the repository
// as ../shared/goproxy is (buildcache.SharedGoProxy): a git archive of the
// release's tag with one top directory, openbao-VERSION/. It may not
// exist.
func OpenBaoSource() (string, error) {
	proxy, err := buildcache.SharedGoProxy()
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(proxy), "openbao", "openbao-"+OpenBaoVersion+"-src.tar.gz"), nil
}

// openBaoTop is the archive's top directory, the module built.
const openBaoTop = "openbao-" + OpenBaoVersion

// sourceSum is the file of the unpacked source that holds the archive's
// SHA-256: a key file of the build, so that another archive is another
// build even with the same go.mod and go.sum.
const sourceSum = "ckegen-source.sha256"

// OpenBaoSpec is the build of OpenBao's bao from the archive
// OpenBaoSource, unpacked first into the cache when it is not there yet
// (a directory named by the archive's hash). The module's go.mod replaces
// OpenBao's api and sdk modules with directories of the archive, so it is
// built where it was unpacked; the five modules of OpenBao's KMS wrappers
// that the usual proxy lacks come from ../shared/goproxy. Stripped and
// stamped with the release's version (a release build sets it so).
func OpenBaoSpec() (buildcache.Spec, error) {
	archive, err := OpenBaoSource()
	if err != nil {
		return buildcache.Spec{}, err
	}
	cache, err := buildcache.Dir(EnvOpenBaoCache, "openbao")
	if err != nil {
		return buildcache.Spec{}, err
	}
	module, err := unpackSource(archive, cache)
	if err != nil {
		return buildcache.Spec{}, err
	}
	proxy, err := buildcache.SharedGoProxy()
	if err != nil {
		return buildcache.Spec{}, err
	}
	return buildcache.Spec{
		Name:     "OpenBao " + OpenBaoVersion + " (bao), the tests' Vault",
		Cache:    "openbao",
		CacheEnv: EnvOpenBaoCache,
		Prefix:   OpenBaoVersion + "-",
		Module:   module,
		Packages: []string{"."},
		Outputs:  []string{"bao"},
		Flags: []string{"-trimpath",
			"-ldflags=-s -w -X github.com/openbao/openbao/version.fullVersion=" + strings.TrimPrefix(OpenBaoVersion, "v")},
		KeyFiles:  []string{sourceSum},
		FileProxy: proxy,
		Timeout:   OpenBaoBuildTimeout,
	}, nil
}

// OpenBao returns the path of a bao binary: $CKEGEN_OPENBAO when set,
// otherwise the one built from OpenBaoSpec, building it first when the
// cache has none. logf, when not nil, is told when it builds or waits
// for another process's build.
func OpenBao(logf func(format string, args ...any)) (string, error) {
	return program(EnvOpenBao, OpenBaoSpec, logf)
}

// unpackSource unpacks the archive into cache/src-VERSION-HASH, unless a
// copy is there, and returns the module's directory in it. The copy is
// made in a temporary directory renamed into place complete, so that
// processes unpacking at once each see a complete copy or none.
func unpackSource(archive, cache string) (string, error) {
	sum, err := fileSum(archive)
	if err != nil {
		return "", fmt.Errorf("OpenBao's source %s: %w (it is laid beside the repository as ../shared/openbao; or set %s to a built bao)", archive, err, EnvOpenBao)
	}
	dir := filepath.Join(cache, "src-"+OpenBaoVersion+"-"+sum[:16])
	module := filepath.Join(dir, openBaoTop)
	if unpacked(module, sum) {
		return module, nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(cache, "src-*.tmp")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	if err := untar(archive, tmp, openBaoTop); err != nil {
		return "", fmt.Errorf("unpacking %s: %w", archive, err)
	}
	if err := os.WriteFile(filepath.Join(tmp, openBaoTop, sourceSum), []byte(sum+"\n"), 0o644); err != nil {
		return "", err
	}
	// Another process may have put its copy in place meanwhile: a copy
	// is renamed into place complete, so one there is used.
	if err := os.Rename(tmp, dir); err != nil && !unpacked(module, sum) {
		return "", fmt.Errorf("%w (remove %s, an incomplete copy of the source)", err, dir)
	}
	return module, nil
}

// unpacked reports whether module is a complete copy of the archive whose
// hash is sum: the hash file is written last.
func unpacked(module, sum string) bool {
	data, err := os.ReadFile(filepath.Join(module, sourceSum))
	return err == nil && strings.TrimSpace(string(data)) == sum
}

// fileSum is the hex SHA-256 of the file at name.
func fileSum(name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// untar writes the directories and regular files of the gzipped tar
// archive into dir. Every entry must be under the directory top; other
// kinds of entry (symbolic links, git archive's global header) are left
// out, as a Go module's zip leaves them out.
func untar(archive, dir, top string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	files := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if h.Typeflag != tar.TypeDir && h.Typeflag != tar.TypeReg {
			continue
		}
		name := path.Clean(h.Name)
		if !fs.ValidPath(name) || (name != top && !strings.HasPrefix(name, top+"/")) {
			return fmt.Errorf("entry %q is not under %s/", h.Name, top)
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		out, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644|fs.FileMode(h.Mode)&0o111)
		if err != nil {
			return err
		}
		_, err = io.Copy(out, tr)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		files++
	}
	if _, err := os.Stat(filepath.Join(dir, top, "go.mod")); err != nil || files == 0 {
		return fmt.Errorf("no %s/go.mod in the archive (%d files)", top, files)
	}
	return nil
}
