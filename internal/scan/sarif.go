package scan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"
)

// The subset of SARIF 2.1.0 read and written here: runs, each with its
// tool's name and results; a result's rule, level, message and first
// location.
type (
	sarifLog struct {
		Version string     `json:"version"`
		Schema  string     `json:"$schema,omitempty"`
		Runs    []sarifRun `json:"runs"`
	}
	sarifRun struct {
		Tool    sarifTool     `json:"tool"`
		Results []sarifResult `json:"results"`
	}
	sarifTool struct {
		Driver struct {
			Name string `json:"name"`
		} `json:"driver"`
	}
	sarifResult struct {
		RuleID    string          `json:"ruleId,omitempty"`
		Level     string          `json:"level,omitempty"`
		Message   sarifMessage    `json:"message"`
		Locations []sarifLocation `json:"locations,omitempty"`
	}
	sarifMessage struct {
		Text string `json:"text"`
	}
	sarifLocation struct {
		PhysicalLocation struct {
			ArtifactLocation struct {
				URI string `json:"uri"`
			} `json:"artifactLocation"`
			Region *struct {
				StartLine int `json:"startLine,omitempty"`
			} `json:"region,omitempty"`
		} `json:"physicalLocation"`
	}
)

// ErrSARIF is wrapped by every error of [ParseSARIF].
var ErrSARIF = errors.New("not SARIF 2.1.0")

// Bounds of what one scanner may report.
const (
	maxFieldRunes = 1000 // a message, rule id or file name is cut there
)

// ParseSARIF reads the results of a SARIF 2.1.0 log as findings, at most
// maxFindings of them (more is an error: a scanner that reports without
// bound is broken, and keeping the first few would hide that). Text
// fields are cut to a bounded length and stripped of control and
// invisible characters; a location outside the skill folder (absolute, or
// with ..) is kept as the file name alone.
func ParseSARIF(data []byte, scanner string, maxFindings int) ([]Finding, error) {
	var log sarifLog
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&log); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrSARIF, oneLine(err.Error(), 200))
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: more than one JSON value", ErrSARIF)
	}
	if log.Version != "2.1.0" {
		return nil, fmt.Errorf("%w: version %q", ErrSARIF, oneLine(log.Version, 40))
	}
	if log.Runs == nil {
		return nil, fmt.Errorf("%w: no runs", ErrSARIF)
	}
	var out []Finding
	for _, run := range log.Runs {
		for _, r := range run.Results {
			if len(out) == maxFindings {
				return nil, fmt.Errorf("scanner %s reported more than %d findings; fix the scanner or raise its limit", scanner, maxFindings)
			}
			f := Finding{Scanner: scanner, RuleID: clean(r.RuleID), Level: r.Level, Message: clean(r.Message.Text)}
			switch f.Level {
			case LevelError, LevelWarning, LevelNote:
			case "none":
				f.Level = LevelNote
			default:
				f.Level = LevelWarning // SARIF's default
			}
			if f.RuleID == "" {
				f.RuleID = "unnamed"
			}
			if len(r.Locations) > 0 {
				pl := r.Locations[0].PhysicalLocation
				f.File = relFile(pl.ArtifactLocation.URI)
				if pl.Region != nil && pl.Region.StartLine > 0 {
					f.Line = pl.Region.StartLine
				}
			}
			out = append(out, f)
		}
	}
	return out, nil
}

func clean(s string) string { return oneLine(s, maxFieldRunes) }

// relFile turns a result's artifact URI into a path below the skill root.
func relFile(uri string) string {
	if u, err := url.Parse(uri); err == nil && (u.Scheme == "file" || u.Scheme == "") {
		uri = u.Path
	}
	uri = strings.ReplaceAll(uri, "\\", "/")
	p := path.Clean("/" + uri)[1:]
	if strings.HasPrefix(uri, "/") || slices.Contains(strings.Split(uri, "/"), "..") {
		p = path.Base(p) // outside the folder the scanner was given
	}
	return clean(p)
}

// SARIF encodes findings as a SARIF 2.1.0 log, one run per scanner, in
// the order the scanners first appear.
func SARIF(findings []Finding) ([]byte, error) {
	log := sarifLog{Version: "2.1.0", Schema: "https://json.schemastore.org/sarif-2.1.0.json", Runs: []sarifRun{}}
	runOf := map[string]int{}
	for _, f := range findings {
		i, ok := runOf[f.Scanner]
		if !ok {
			i = len(log.Runs)
			runOf[f.Scanner] = i
			var run sarifRun
			run.Tool.Driver.Name = f.Scanner
			run.Results = []sarifResult{}
			log.Runs = append(log.Runs, run)
		}
		r := sarifResult{RuleID: f.RuleID, Level: f.Level, Message: sarifMessage{f.Message}}
		if f.File != "" {
			var loc sarifLocation
			loc.PhysicalLocation.ArtifactLocation.URI = f.File
			if f.Line > 0 {
				loc.PhysicalLocation.Region = &struct {
					StartLine int `json:"startLine,omitempty"`
				}{f.Line}
			}
			r.Locations = []sarifLocation{loc}
		}
		log.Runs[i].Results = append(log.Runs[i].Results, r)
	}
	return json.MarshalIndent(log, "", "  ")
}
