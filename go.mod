module github.com/ckegen/ckegen

go 1.26.8

require (
	github.com/Khan/genqlient v0.8.1
	github.com/google/go-cmp v0.7.0
	github.com/graph-gophers/graphql-go v1.11.0
	github.com/spf13/cobra v1.10.2
	github.com/vektah/gqlparser/v2 v2.5.19
	golang.org/x/tools v0.52.0
	k8s.io/apimachinery v0.37.2
	pgregory.net/rapid v1.3.0
	sigs.k8s.io/yaml v1.6.0
)

require (
	github.com/agnivade/levenshtein v1.1.1 // indirect
	github.com/alexflint/go-arg v1.5.1 // indirect
	github.com/alexflint/go-scalar v1.2.0 // indirect
	github.com/bmatcuk/doublestar/v4 v4.6.1 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/kr/text v0.2.0 // indirect
	github.com/spf13/pflag v1.0.10 // indirect
	go.yaml.in/yaml/v2 v2.4.4 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/mod v0.42.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	gopkg.in/yaml.v2 v2.4.0 // indirect
)

tool github.com/Khan/genqlient
