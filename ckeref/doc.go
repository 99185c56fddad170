// Package ckeref holds no code: its tests run CKE v1.35.4's sabakan
// generator beside ckegen's (see differential_test.go and bench_test.go).
package ckeref
