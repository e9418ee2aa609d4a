# gpufrag_probe's sitecustomize: `python -m gpufrag_probe run` puts this
# directory first on PYTHONPATH, so every Python process of the command
# imports this file at startup. It starts the probe when GPUFRAG_PROBE_DIR is
# set (a daemon thread that waits for the host to initialise CUDA), then
# runs the sitecustomize this file shadows, if there is one. Nothing here
# may stop the interpreter from starting: errors print one line.


def _gpufrag_probe_boot():
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    try:
        if os.environ.get("GPUFRAG_PROBE_DIR") and sys.version_info >= (3, 9):
            mod = sys.modules.get("gpufrag_probe")
            if mod is None:  # this copy of the package, without touching sys.path
                import importlib.util
                pkg = os.path.dirname(here)
                spec = importlib.util.spec_from_file_location(
                    "gpufrag_probe", os.path.join(pkg, "__init__.py"), submodule_search_locations=[pkg])
                mod = importlib.util.module_from_spec(spec)
                sys.modules["gpufrag_probe"] = mod
                try:
                    spec.loader.exec_module(mod)
                except BaseException:
                    del sys.modules["gpufrag_probe"]
                    raise
            mod.start_from_env("sitecustomize")
    except Exception as e:
        try:
            sys.stderr.write("gpufrag_probe: not started: %s: %s\n" % (type(e).__name__, e))
        except Exception:
            pass

    # The sitecustomize this one shadows (Debian's, a virtualenv's, the
    # user's): found on the rest of sys.path and run as `sitecustomize`.
    import importlib.machinery
    import importlib.util
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        chained = importlib.util.module_from_spec(spec)
        sys.modules["sitecustomize"] = chained
        spec.loader.exec_module(chained)  # its errors are reported by site, as without us


_gpufrag_probe_boot()
del _gpufrag_probe_boot
