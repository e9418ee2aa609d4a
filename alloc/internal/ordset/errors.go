package ordset

import "fmt"

func errorf(format string, a ...any) error { return fmt.Errorf("ordset: "+format, a...) }
