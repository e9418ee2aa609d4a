package nvml

import "testing"

func TestErrorMessage(t *testing.T) {
	for _, tc := range []struct {
		e    Error
		want string
	}{
		{Error{Call: "nvmlInit", Device: -1, Code: 12, Msg: "ERROR_LIBRARY_NOT_FOUND"}, "nvml: nvmlInit: ERROR_LIBRARY_NOT_FOUND (nvmlReturn_t 12)"},
		{Error{Call: "nvmlDeviceGetUUID", Device: 0, Code: 15, Msg: "GPU is lost"}, "nvml: GPU 0: nvmlDeviceGetUUID: GPU is lost (nvmlReturn_t 15)"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}
