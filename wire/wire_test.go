package wire

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestResourcesDecode(t *testing.T) {
	type entry struct {
		Resources *Resources `json:"resources"`
	}
	tests := []struct {
		in      string
		dynamic bool
		files   int
		wantErr bool
		absent  bool
	}{
		{in: `{"resources":"dynamic"}`, dynamic: true},
		{in: `{"resources":[]}`, files: 0},
		{in: `{"resources":[{"uri":"skill://a/SKILL.md","digest":"sha256:00","size":3}]}`, files: 1},
		{in: `{}`, absent: true},
		{in: `{"resources":null}`, absent: true}, // encoding/json sets the pointer to nil
		{in: `{"resources":"Dynamic"}`, wantErr: true},
		{in: `{"resources":{}}`, wantErr: true},
		{in: `{"resources":1}`, wantErr: true},
		{in: `{"resources":[{"uri":"x","digest":"d","size":"3"}]}`, wantErr: true},
		{in: `{"resources":[{"uri":"x","digest":"d","size":1.5}]}`, wantErr: true},
	}
	for _, tt := range tests {
		var e entry
		err := json.Unmarshal([]byte(tt.in), &e)
		if tt.wantErr {
			if err == nil {
				t.Errorf("%s: decoded, want an error", tt.in)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.in, err)
			continue
		}
		if tt.absent {
			if e.Resources != nil {
				t.Errorf("%s: absent resources decoded as %+v; an entry without resources must stay invalid", tt.in, e.Resources)
			}
			continue
		}
		if e.Resources.Dynamic != tt.dynamic || len(e.Resources.Files) != tt.files || (!tt.dynamic && e.Resources.Files == nil) {
			t.Errorf("%s: got %+v", tt.in, e.Resources)
		}
	}
	var r Resources
	if err := r.UnmarshalJSON([]byte(`null`)); !errors.Is(err, ErrInvalidResources) {
		t.Errorf("null: %v, want ErrInvalidResources", err)
	}
}

func TestResourcesEncode(t *testing.T) {
	for _, tt := range []struct {
		r    Resources
		want string
	}{
		{Resources{Dynamic: true}, `"dynamic"`},
		{Resources{}, `[]`},
		{Resources{Files: []SkillResource{{URI: "skill://a/SKILL.md", Digest: "sha256:ab", Size: 0}}}, `[{"uri":"skill://a/SKILL.md","digest":"sha256:ab","size":0}]`},
	} {
		b, err := json.Marshal(tt.r)
		if err != nil || string(b) != tt.want {
			t.Errorf("Marshal(%+v) = %s, %v; want %s", tt.r, b, err, tt.want)
		}
	}
}

func TestListResultEncodesRequiredFields(t *testing.T) {
	b, err := json.Marshal(&ListSkillsResult{ResultType: ResultComplete, Skills: []Skill{}, TTLMs: 0, CacheScope: CacheScopePublic})
	if err != nil {
		t.Fatal(err)
	}
	// ttlMs 0 and an empty skills array must be on the wire (REQUIRED fields).
	if string(b) != `{"resultType":"complete","skills":[],"ttlMs":0,"cacheScope":"public"}` {
		t.Errorf("got %s", b)
	}
}
