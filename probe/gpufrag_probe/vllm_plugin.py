"""vLLM general plugin: vLLM calls register() in every process it starts
(API server, engine core, each worker) through the entry point

    [project.entry-points."vllm.general_plugins"]
    gpufrag_probe = "gpufrag_probe.vllm_plugin:register"

It starts the probe when GPUFRAG_PROBE_DIR is set, once per process (a
second call returns the running probe). Processes that never initialise
CUDA (the API server) keep an idle thread that writes nothing."""
from . import start_from_env


def register():
    """Starts the probe if GPUFRAG_PROBE_DIR is set; never raises."""
    start_from_env("vllm plugin")
