// Loading a model by preset name or config.json path. See package model for the overview.

package model

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Load returns the model that ref names, as the CLI's --model flag takes it:
//
//  1. a preset name, case-insensitively (see PresetNames);
//  2. otherwise a path to a Hugging Face config.json, or to a directory
//     holding one (a downloaded model snapshot), read with ReadHFConfig and
//     named by the path.
//
// A preset wins over a file of the same name; write ./name to force the
// file. If ref is neither, the error wraps ErrUnknownModel and the file
// error, and lists the presets. Errors in a file wrap ErrBadConfig.
func Load(ref string) (Model, error) {
	if m, err := Preset(ref); err == nil {
		return m, nil
	}
	path := ConfigPath(ref)
	f, err := os.Open(path)
	if err != nil {
		return Model{}, fmt.Errorf("%w: %q is neither a preset (%s) nor a readable config.json: %w",
			ErrUnknownModel, ref, strings.Join(PresetNames(), ", "), err)
	}
	defer f.Close()
	return ReadHFConfig(f, path)
}

// ConfigPath returns the file Load reads for ref: "" for a preset (or an
// empty ref), ref/config.json when ref is a directory, else ref. Callers
// that write files compare their outputs with it (an output must not
// replace the config.json a --model directory holds).
func ConfigPath(ref string) string {
	if ref == "" {
		return ""
	}
	if _, err := Preset(ref); err == nil {
		return ""
	}
	if fi, err := os.Stat(ref); err == nil && fi.IsDir() {
		return filepath.Join(ref, "config.json")
	}
	return ref
}
