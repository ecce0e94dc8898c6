package input

import (
	"bufio"
	"encoding/json"
	"os"
)

// DumpVersionKey is the member of a dump's List, before its items, that
// records the API server's version ("v1.37.2").
const DumpVersionKey = "csimigrate.io/serverVersion"

// DumpListedKey is the member of a dump's List, before its items, that
// names the resources it lists whole (the kinds of Listers): none of one in
// the dump is what the cluster has.
const DumpListedKey = "csimigrate.io/listed"

// DumpServerVersion is the API server's version a dump among files
// records ("" when none does): read from each file's head, up to its
// items, so that a large dump is not read for it.
func DumpServerVersion(files []string) string {
	for _, path := range files {
		if v, _ := fileHeader(path); v != "" {
			return v
		}
	}
	return ""
}

// DumpListed are the resources the dumps among files list whole.
func DumpListed(files []string) []string {
	var out []string
	for _, path := range files {
		_, listed := fileHeader(path)
		out = append(out, listed...)
	}
	return out
}

// fileHeader reads a dump's version and listed resources from its head.
func fileHeader(path string) (version string, listed []string) {
	f, err := os.Open(path)
	if err != nil {
		return "", nil
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReader(f))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", nil
	}
	for dec.More() {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok || key == "items" {
			return version, listed
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return version, listed
		}
		switch key {
		case DumpVersionKey:
			_ = json.Unmarshal(v, &version)
		case DumpListedKey:
			_ = json.Unmarshal(v, &listed)
		}
	}
	return version, listed
}
