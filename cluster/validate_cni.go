package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ckegen/ckegen/internal/strictjson"
)

// How CNI's libcni v1.3.0 (which CKE v1.35.4 calls) reads a configuration,
// rule by rule; ckegen's module does not require CNI's.

// cniPlugin has the shape of CNI's PluginConf, what a plugin configuration
// decodes into.
type cniPlugin struct {
	CNIVersion   string          `json:"cniVersion"`
	Name         string          `json:"name"`
	Type         string          `json:"type"`
	Capabilities map[string]bool `json:"capabilities"`
	IPAM         struct {
		Type string `json:"type"`
	} `json:"ipam"`
	DNS struct {
		Nameservers []string `json:"nameservers"`
		Domain      string   `json:"domain"`
		Search      []string `json:"search"`
		Options     []string `json:"options"`
	} `json:"dns"`
	RawPrevResult    map[string]any `json:"prevResult"`
	ValidAttachments []struct {
		ContainerID string `json:"containerID"`
		IfName      string `json:"ifname"`
	} `json:"cni.dev/valid-attachments"`
}

// cniPluginConf reads data as a plugin configuration: JSON of the shape of
// cniPlugin, with a type.
func cniPluginConf(data []byte) error {
	var p cniPlugin
	if err := json.Unmarshal(data, &p); err != nil {
		return fmt.Errorf("not a CNI plugin configuration: %w", jsonWords(data, new(cniPlugin), err))
	}
	if p.Type == "" {
		return errors.New(`a CNI plugin configuration needs a "type"`)
	}
	return nil
}

// cniConfList reads data as a network configuration list: its name, its
// versions, its flags and its plugins, in that order, as libcni does.
func cniConfList(data []byte) error {
	var list map[string]any
	if err := json.Unmarshal(data, &list); err != nil {
		return fmt.Errorf("not a CNI configuration list: %w", jsonWords(data, new(map[string]any), err))
	}
	if err := cniListName(list); err != nil {
		return err
	}
	if err := cniListVersions(list); err != nil {
		return err
	}
	inlinedOnly, err := cniListFlags(list)
	if err != nil {
		return err
	}
	return cniListPlugins(list, inlinedOnly)
}

// cniListName checks that the list has a name, a string (which may be
// empty).
func cniListName(list map[string]any) error {
	name, ok := list["name"]
	if !ok {
		return errors.New(`a CNI configuration list needs a "name"`)
	}
	if _, ok := name.(string); !ok {
		return errors.New(`a CNI configuration list's "name" must be a string`)
	}
	return nil
}

// cniListVersions checks cniVersion, a string, and cniVersions, a list of
// versions. CNI parses the versions only when cniVersions is there: every
// listed version, then cniVersion with them.
func cniListVersions(list map[string]any) error {
	version := ""
	if v, ok := list["cniVersion"]; ok {
		if version, ok = v.(string); !ok {
			return errors.New(`"cniVersion" must be a string`)
		}
	}
	vs, ok := list["cniVersions"]
	if !ok {
		return nil
	}
	items, ok := vs.([]any)
	if !ok {
		return errors.New(`"cniVersions" must be a list`)
	}
	for i, v := range items {
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf(`"cniVersions"[%d] must be a string`, i)
		}
		if err := cniVersion(s); err != nil {
			return fmt.Errorf(`"cniVersions"[%d]: %w`, i, err)
		}
	}
	if version != "" {
		if err := cniVersion(version); err != nil {
			return fmt.Errorf(`"cniVersion": %w`, err)
		}
	}
	return nil
}

// cniListFlags checks disableCheck, disableGC and loadOnlyInlinedPlugins,
// each true or false, and returns loadOnlyInlinedPlugins (false when it is
// not there).
func cniListFlags(list map[string]any) (inlinedOnly bool, err error) {
	for _, key := range []string{"disableCheck", "disableGC", "loadOnlyInlinedPlugins"} {
		v, ok := list[key]
		if !ok {
			continue
		}
		b, ok := cniBool(v)
		if !ok {
			return false, fmt.Errorf("%q must be true or false (or a string of either)", key)
		}
		if key == "loadOnlyInlinedPlugins" {
			inlinedOnly = b
		}
	}
	return inlinedOnly, nil
}

// cniBool reads a flag as libcni does: a JSON boolean, or a string that is
// "true" or "false" in any case.
func cniBool(v any) (b, ok bool) {
	if b, ok := v.(bool); ok {
		return b, true
	}
	s, ok := v.(string)
	if !ok {
		return false, false
	}
	switch strings.ToLower(s) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// cniListPlugins checks the plugins: a list that is not empty, of plugin
// configurations. A list without plugins is valid, unless it loads only
// inlined plugins.
func cniListPlugins(list map[string]any, inlinedOnly bool) error {
	plugins, ok := list["plugins"]
	if !ok {
		if inlinedOnly {
			return errors.New(`"loadOnlyInlinedPlugins" is true without "plugins"`)
		}
		return nil
	}
	items, ok := plugins.([]any)
	if !ok {
		return errors.New(`"plugins" must be a list`)
	}
	if len(items) == 0 {
		return errors.New(`"plugins" is empty`)
	}
	for i, p := range items {
		data, err := json.Marshal(p)
		if err == nil {
			err = cniPluginConf(data)
		}
		if err != nil {
			return fmt.Errorf(`"plugins"[%d]: %w`, i, err)
		}
	}
	return nil
}

// cniVersion parses a CNI version as libcni does: empty, or one to three
// dot-separated integers (as strconv.Atoi reads them).
func cniVersion(v string) error {
	if v == "" {
		return nil
	}
	parts := strings.Split(v, ".")
	if len(parts) > 3 {
		return fmt.Errorf("invalid version %q: more than three parts", v)
	}
	for _, p := range parts {
		if _, err := strconv.Atoi(p); err != nil {
			return fmt.Errorf("invalid version %q", v)
		}
	}
	return nil
}

// jsonWords is err, encoding/json's error decoding data into v (as libcni
// decodes), in strictjson's words: where, and what in JSON's terms, not
// Go's.
func jsonWords(data []byte, v any, err error) error {
	if serr := strictjson.UnmarshalIgnoringUnknown(data, v); serr != nil {
		return serr
	}
	return errors.New("not JSON of the expected shape")
}
