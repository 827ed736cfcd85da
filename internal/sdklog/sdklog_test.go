package sdklog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestQuiet(t *testing.T) {
	var buf bytes.Buffer
	l := Quiet(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	l.Info("server session connected")
	l.Warn("calling notifications/x: broken")
	if s := buf.String(); strings.Contains(s, "session connected") || !strings.Contains(s, "level=WARN") {
		t.Errorf("at INFO: %q", s)
	}
	buf.Reset()
	l = Quiet(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))).With("origin", "docs")
	l.Info("server session connected")
	if s := buf.String(); !strings.Contains(s, "level=DEBUG") || !strings.Contains(s, "origin=docs") {
		t.Errorf("at DEBUG: %q", s)
	}
}
