package runtime

import (
	"io"
	"log/slog"
)

type slogLogger = slog.Logger

func newTextLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
