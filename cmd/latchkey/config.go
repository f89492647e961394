package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

// secretFlags are flags whose values are secrets: they are read from the environment
// (LATCHKEY_<FLAG>) or a file (LATCHKEY_<FLAG>_FILE) only, never from the command line (every
// user of the machine sees it in ps) nor from the configuration file (often world-readable,
// often committed).
var secretFlags = map[string]bool{
	"smtp-password":         true,
	"sms-twilio-auth-token": true,
	"transit-token":         true,
	"pkcs11-pin":            true,
}

// configFlag is the flag naming the YAML configuration file; a command that registers it reads
// every other flag's value from that file when neither the command line nor the environment
// gives one (precedence: flag > environment > file).
const configFlag = "config"

// repeatable is implemented by flag values that may be given more than once (their values
// accumulate), so a configuration file may give them as a YAML list.
type repeatable interface{ repeatable() }

func (*listFlag) repeatable() {}

// MaxConfigFileBytes bounds the configuration file, checked before it is parsed
// (docs/limits.md §9). The example in docs/operations.md is about 300 bytes; one that sets every
// flag of serve, with a few dozen chain RPC URLs, is under 8 KiB. The parser keeps a node of
// about 200 bytes per collection it reads (and stops at 10,000 levels of nesting), so the bound
// also bounds its memory.
const MaxConfigFileBytes = 64 << 10

// applyConfigFile fills, from the YAML file at path, every flag of fs not in set (the flags the
// command line or the environment gave). The file is a mapping of flag names (without the
// dashes) to values: a scalar, or a list for a repeatable flag. Unknown keys, keys given twice,
// secrets and values of the wrong shape are refused, naming the line.
func applyConfigFile(fs *flag.FlagSet, path string, set map[string]bool) error {
	b, err := readConfigFile(path)
	if err != nil {
		return usageError{fmt.Sprintf("--%s: %v", configFlag, err)}
	}
	return applyConfig(fs, path, b, set)
}

// readConfigFile reads the file at path, refusing one over MaxConfigFileBytes without reading
// the rest of it.
func readConfigFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxConfigFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxConfigFileBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, MaxConfigFileBytes)
	}
	return b, nil
}

// applyConfig is applyConfigFile on the file's bytes b.
func applyConfig(fs *flag.FlagSet, path string, b []byte, set map[string]bool) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return usageError{fmt.Sprintf("%s: %v", path, err)}
	}
	if doc.Kind == 0 { // an empty file configures nothing
		return nil
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return usageError{
			fmt.Sprintf(
				"%s: line %d: the file must be a mapping of flag names to values (api-addr: 127.0.0.1:8080)",
				path,
				root.Line,
			),
		}
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name != configFlag && !secretFlags[f.Name] {
			names = append(names, f.Name)
		}
	})
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		at := fmt.Sprintf("%s: line %d", path, k.Line)
		if k.Kind != yaml.ScalarNode {
			return usageError{at + ": a key must be a flag name"}
		}
		if v.Kind == yaml.AliasNode {
			return usageError{at + ": " + noAliases}
		}
		name := strings.TrimPrefix(k.Value, "--")
		if seen[name] {
			return usageError{fmt.Sprintf("%s: %q is given twice", at, name)}
		}
		seen[name] = true
		f := fs.Lookup(name)
		switch {
		case name == configFlag:
			return usageError{at + ": a configuration file cannot name another"}
		case secretFlags[name]:
			return usageError{
				fmt.Sprintf(
					"%s: %q is a secret: give it in %s or in a file named by %s_FILE, never in the configuration file",
					at,
					name,
					EnvName(name),
					EnvName(name),
				),
			}
		case f == nil:
			return usageError{fmt.Sprintf("%s: unknown key %q%s", at, name, didYouMean(name, names, false))}
		}
		values, err := configValues(f, v)
		if err != nil {
			return usageError{fmt.Sprintf("%s: %s: %v", at, name, err)}
		}
		if set[name] {
			continue // the command line or the environment wins
		}
		for _, s := range values {
			if err := f.Value.Set(s); err != nil {
				return usageError{fmt.Sprintf("%s: %s: %v", at, name, err)}
			}
		}
	}
	return nil
}

// noAliases refuses a YAML alias (*name). The file is parsed into nodes, so an alias is never
// expanded (a "billion laughs" of nested aliases costs its size); it is refused rather than
// followed, because a flag's value is a plain scalar and following aliases would bring the
// expansion back.
const noAliases = "aliases (*name) are not supported: write the value itself"

// configValues is the list of strings a YAML value sets a flag to.
func configValues(f *flag.Flag, v *yaml.Node) ([]string, error) {
	switch v.Kind {
	case yaml.ScalarNode:
		if v.Tag == "!!null" {
			return nil, fmt.Errorf("has no value (write \"\" for an empty one)")
		}
		return []string{v.Value}, nil
	case yaml.SequenceNode:
		if _, ok := f.Value.(repeatable); !ok {
			return nil, fmt.Errorf("takes one value, not a list")
		}
		out := make([]string, 0, len(v.Content))
		for _, item := range v.Content {
			if item.Kind == yaml.AliasNode {
				return nil, fmt.Errorf("line %d: %s", item.Line, noAliases)
			}
			if item.Kind != yaml.ScalarNode || item.Tag == "!!null" {
				return nil, fmt.Errorf("line %d: a list item must be a plain value", item.Line)
			}
			out = append(out, item.Value)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("must be a value or a list of values, not a mapping")
	}
}
