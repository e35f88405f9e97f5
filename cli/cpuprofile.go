package cli

import (
	"os"
	"runtime/pprof"
)

// startCPUProfile writes a CPU profile to path until stop is called: the
// hidden serve --cpu-profile, so that where a running daemon spends its time
// can be measured (docs/BENCHMARKS.md) without building another binary.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
