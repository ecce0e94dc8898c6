// Package vcenter reads vCenter for csimigrate's plan, with govmomi,
// connected the way the vSphere CSI driver is: by the driver's own
// configuration file (csi-vsphere.conf). It only reads.
package vcenter

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ConfigKey is the key of the driver's Secret (vsphere-config-secret in
// vmware-system-csi, by default) that holds csi-vsphere.conf.
const ConfigKey = "csi-vsphere.conf"

// ErrConfig is wrapped by the errors of ParseConfig.
var ErrConfig = errors.New("vSphere CSI configuration")

// Config is what csimigrate reads of the driver's csi-vsphere.conf.
type Config struct {
	// ClusterID is [Global] cluster-id.
	ClusterID string
	// VCenters are the [VirtualCenter "host"] sections, in file order,
	// with [Global]'s user, password, port, insecure-flag, datacenters,
	// ca-file and thumbprint filled in where a section lacks them.
	VCenters []Server
}

// Server is one vCenter of the configuration. Password is never printed
// (String leaves it out).
type Server struct {
	Host        string
	Port        string
	User        string
	Password    string
	Insecure    bool
	Datacenters []string
	CAFile      string
	Thumbprint  string
}

// String names the server and its user, never the password.
func (s Server) String() string {
	return fmt.Sprintf("vCenter %s:%s as %s", s.Host, s.Port, s.User)
}

// GoString is String, so that %#v prints no password either.
func (s Server) GoString() string { return s.String() }

// keys of a section that csimigrate reads (others are the driver's own,
// ignored).
var serverKeys = []string{"user", "password", "port", "insecure-flag", "datacenters", "ca-file", "thumbprint"}

// ParseConfig parses csi-vsphere.conf (the gcfg INI syntax the driver
// reads: [section "name"], key = value, quoted values with \" \\ \n \t
// escapes, ; and # comments). An error names the line, never a value of
// the password key.
func ParseConfig(data []byte) (*Config, error) {
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrConfig)
	}
	global := map[string]string{}
	type section struct {
		host string
		keys map[string]string
	}
	var vcs []section
	var cur map[string]string // nil: a section csimigrate ignores
	inSection := false
	for n, line := range strings.Split(string(data), "\n") {
		n++
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || line[0] == ';' || line[0] == '#' {
			continue
		}
		if line[0] == '[' {
			name, sub, err := parseSection(line)
			if err != nil {
				return nil, fmt.Errorf("%w: line %d: %v", ErrConfig, n, err)
			}
			inSection = true
			switch strings.ToLower(name) {
			case "global":
				cur = global
			case "virtualcenter":
				if sub == "" {
					return nil, fmt.Errorf("%w: line %d: [VirtualCenter] needs the vCenter's host: [VirtualCenter \"host\"]", ErrConfig, n)
				}
				if slices.ContainsFunc(vcs, func(s section) bool { return s.host == sub }) {
					return nil, fmt.Errorf("%w: line %d: vCenter %q is configured twice", ErrConfig, n, sub)
				}
				vcs = append(vcs, section{host: sub, keys: map[string]string{}})
				cur = vcs[len(vcs)-1].keys
			default:
				cur = nil
			}
			continue
		}
		if !inSection {
			return nil, fmt.Errorf("%w: line %d: a key before any [section]", ErrConfig, n)
		}
		key, value, err := parseKeyValue(line)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrConfig, n, err)
		}
		if cur != nil {
			cur[strings.ToLower(key)] = value
		}
	}
	if len(vcs) == 0 {
		return nil, fmt.Errorf("%w: no [VirtualCenter \"host\"] section", ErrConfig)
	}
	cfg := &Config{ClusterID: global["cluster-id"]}
	for _, vc := range vcs {
		s, err := serverOf(vc.host, vc.keys, global)
		if err != nil {
			return nil, err
		}
		cfg.VCenters = append(cfg.VCenters, s)
	}
	return cfg, nil
}

// serverOf is the Server of a [VirtualCenter "host"] section's keys, with
// [Global]'s where the section lacks them.
func serverOf(host string, keys, global map[string]string) (Server, error) {
	for _, k := range serverKeys {
		if _, ok := keys[k]; !ok && global[k] != "" {
			keys[k] = global[k]
		}
	}
	s := Server{Host: host, Port: keys["port"], User: keys["user"], Password: keys["password"], CAFile: keys["ca-file"], Thumbprint: keys["thumbprint"]}
	if s.Port == "" {
		s.Port = "443"
	}
	if p, err := strconv.ParseUint(s.Port, 10, 16); err != nil || p == 0 {
		return Server{}, fmt.Errorf("%w: [VirtualCenter %q] port %q: want a port number", ErrConfig, host, s.Port)
	}
	if f := keys["insecure-flag"]; f != "" {
		b, err := strconv.ParseBool(f)
		if err != nil {
			return Server{}, fmt.Errorf("%w: [VirtualCenter %q] insecure-flag %q: want true or false", ErrConfig, host, f)
		}
		s.Insecure = b
	}
	for _, dc := range strings.Split(keys["datacenters"], ",") {
		if dc = strings.TrimSpace(dc); dc != "" {
			s.Datacenters = append(s.Datacenters, dc)
		}
	}
	if s.User == "" {
		return Server{}, fmt.Errorf("%w: [VirtualCenter %q] has no user (nor has [Global])", ErrConfig, host)
	}
	return s, nil
}

// Server is the configuration's one vCenter: vSphere CSI migration is not
// supported with more than one.
func (c *Config) Server() (Server, error) {
	if len(c.VCenters) != 1 {
		var hosts []string
		for _, s := range c.VCenters {
			hosts = append(hosts, s.Host)
		}
		return Server{}, fmt.Errorf("%w: %d vCenters (%s): vSphere CSI migration is supported with one vCenter only", ErrConfig, len(c.VCenters), strings.Join(hosts, ", "))
	}
	return c.VCenters[0], nil
}

// parseSection parses `[name]` or `[name "sub"]`.
func parseSection(line string) (name, sub string, err error) {
	end := strings.LastIndexByte(line, ']')
	if end < 0 {
		return "", "", errors.New("a section header without ']'")
	}
	if rest := strings.TrimSpace(line[end+1:]); rest != "" && rest[0] != ';' && rest[0] != '#' {
		return "", "", errors.New("text after a section header")
	}
	inner := strings.TrimSpace(line[1:end])
	name, quoted, hasSub := strings.Cut(inner, " ")
	if !hasSub {
		return name, "", nil
	}
	quoted = strings.TrimSpace(quoted)
	if len(quoted) < 2 || quoted[0] != '"' || quoted[len(quoted)-1] != '"' {
		return "", "", fmt.Errorf("section %q: want [%s \"name\"]", name, name)
	}
	sub, err = unquote(quoted[1 : len(quoted)-1])
	return name, sub, err
}

// parseKeyValue parses `key = value`, the value quoted in parts or not,
// up to a comment outside quotes. The error never holds the value.
func parseKeyValue(line string) (key, value string, err error) {
	key, raw, ok := strings.Cut(line, "=")
	key = strings.TrimSpace(key)
	if !ok || key == "" {
		return "", "", fmt.Errorf("want key = value (%q)", key)
	}
	var b strings.Builder
	inQuote, escaped := false, false
	quotedEnd := 0 // what a quote ended is not trimmed
	raw = strings.TrimSpace(raw)
	for _, r := range raw {
		switch {
		case escaped:
			switch r {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case '"', '\\':
				b.WriteRune(r)
			default:
				return "", "", fmt.Errorf("key %s: an unknown escape in its value", key)
			}
			escaped = false
		case r == '\\':
			escaped = true
		case r == '"':
			inQuote = !inQuote
			quotedEnd = b.Len()
		case !inQuote && (r == ';' || r == '#'):
			return key, trimAfter(b.String(), quotedEnd), nil
		default:
			b.WriteRune(r)
		}
	}
	if inQuote || escaped {
		return "", "", fmt.Errorf("key %s: its value's quote is not closed", key)
	}
	return key, trimAfter(b.String(), quotedEnd), nil
}

// trimAfter trims the blanks at the end of s beyond offset keep.
func trimAfter(s string, keep int) string {
	return s[:keep] + strings.TrimRight(s[keep:], " \t")
}

// unquote resolves the escapes of a section name.
func unquote(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	escaped := false
	for _, r := range s {
		switch {
		case escaped:
			b.WriteRune(r)
			escaped = false
		case r == '\\':
			escaped = true
		default:
			b.WriteRune(r)
		}
	}
	return b.String(), nil
}
