package skill

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestWriteJSONString checks the fast path for plain strings against
// encoding/json, whose bytes a catalog's ID and every skill entry carry.
func TestWriteJSONString(t *testing.T) {
	for _, s := range []string{
		"", "plain", "naïve café 東京 データ 🔷", "a \"quote\"", `back\slash`, "tab\there",
		"<b>&amp;</b>", "line\u2028sep", "para\u2029sep", "em—dash…", "\x7f del", "bad \xff utf-8",
		"truncated \xe6\x9d", "\x00",
	} {
		var buf bytes.Buffer
		writeJSONString(&buf, s)
		want, _ := json.Marshal(s)
		if !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("writeJSONString(%q) = %s, encoding/json writes %s", s, buf.Bytes(), want)
		}
	}
}

func FuzzWriteJSONString(f *testing.F) {
	f.Add("naïve café 東京 <&>")
	f.Add("\u2028\xff\"\\")
	f.Fuzz(func(t *testing.T, s string) {
		var buf bytes.Buffer
		writeJSONString(&buf, s)
		if want, _ := json.Marshal(s); !bytes.Equal(buf.Bytes(), want) {
			t.Fatalf("writeJSONString(%q) = %s, encoding/json writes %s", s, buf.Bytes(), want)
		}
	})
}
