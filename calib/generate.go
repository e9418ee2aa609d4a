package calib

// The table of bands in docs/calibrate.md (BandsDocPath) is written by the
// command internal/genbands from the embedded residuals:
//
//	go generate ./calib
//
//go:generate go run ./internal/genbands
