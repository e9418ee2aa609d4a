package experiments

// The traces the defrag suite replays (testdata/defrag-suite) are written
// by the command internal/gensuite from ../shared/data/traces:
//
//	go generate ./experiments
//
//go:generate go run ./internal/gensuite
