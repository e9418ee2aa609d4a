"""python -m gpufrag_probe run: the probe in every Python process of a
command, the command's exit status and signals."""
import os
import signal
import subprocess
import sys
import textwrap

from gpufrag_probe import __main__ as cli
from conftest import FAKE_TORCH, PROBE, child_env, pickles, wait_for

WAIT_FOR_FILE = textwrap.dedent("""
    import os, sys, time
    def wait_for_file(d):
        end = time.monotonic() + 20
        while time.monotonic() < end:
            if os.path.isdir(d) and [n for n in os.listdir(d) if n.endswith(".pickle")]:
                return True
            time.sleep(0.01)
        return False
""")


def run_cmd(d, cmd, env=None, extra=(), timeout=60):
    args = [sys.executable, "-m", "gpufrag_probe", "run", "--dir", str(d), "--interval", "0.1"] + list(extra)
    return subprocess.run(args + ["--"] + cmd, env=env or child_env(), capture_output=True, text=True,
                          timeout=timeout)


def test_child_gets_the_probe_and_its_status_comes_back(tmp_path):
    code = WAIT_FOR_FILE + textwrap.dedent("""
        import torch
        torch.cuda.init()
        sys.exit(3 if wait_for_file(sys.argv[1]) else 9)
    """)
    d = tmp_path / "snaps"
    r = run_cmd(d, [sys.executable, "-c", code, str(d)], extra=["--instance", "i", "--model", "m"])
    assert r.returncode == 3, r.stderr
    assert pickles(d) == ["i__m__gpu0.pickle"]


def test_spawned_worker_gets_the_probe(tmp_path):
    script = tmp_path / "server.py"
    script.write_text(WAIT_FOR_FILE + textwrap.dedent("""
        import multiprocessing

        def worker(d):
            import torch  # only the worker uses CUDA
            torch.cuda.init()
            sys.exit(0 if wait_for_file(d) else 9)

        if __name__ == "__main__":
            assert "torch" not in sys.modules
            w = multiprocessing.get_context("spawn").Process(target=worker, args=(os.environ["GPUFRAG_PROBE_DIR"],))
            w.start()
            w.join()
            sys.exit(w.exitcode)
    """))
    d = tmp_path / "snaps"
    r = run_cmd(d, [sys.executable, str(script), "--served-model-name", "spawned"], extra=["--instance", "i"])
    assert r.returncode == 0, r.stderr
    assert pickles(d) == ["i__spawned__gpu0.pickle"]  # the model from the command line


def test_forked_child_restarts_the_probe(tmp_path):
    code = WAIT_FOR_FILE + textwrap.dedent("""
        import gpufrag_probe
        p = gpufrag_probe.start(sys.argv[1], interval_s=0.1, instance="i", model="m")
        pid = os.fork()
        if pid == 0:
            import torch
            torch.cuda.init()
            os._exit(0 if wait_for_file(sys.argv[1]) else 9)
        _, status = os.waitpid(pid, 0)
        assert p._pid == os.getpid() and p.running
        sys.exit(os.waitstatus_to_exitcode(status))
    """)
    d = tmp_path / "snaps"
    r = subprocess.run([sys.executable, "-c", code, str(d)], env=child_env(), capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert pickles(d) == ["i__m__gpu0.pickle"]


def test_shadowed_sitecustomize_still_runs(tmp_path):
    own = tmp_path / "own"
    own.mkdir()
    marker = tmp_path / "marker"
    (own / "sitecustomize.py").write_text("open(%r, 'w').write('ran')\n" % str(marker))
    code = WAIT_FOR_FILE + "import torch\ntorch.cuda.init()\nsys.exit(0 if wait_for_file(sys.argv[1]) else 9)\n"
    d = tmp_path / "snaps"
    env = child_env()
    # gpufrag_probe is not on the command's path: the boot directory loads
    # its own copy of the package.
    env["PYTHONPATH"] = os.pathsep.join([str(own), FAKE_TORCH])
    wrapper = "import sys; sys.path.insert(0, %r); from gpufrag_probe.__main__ import main; sys.exit(main())" % PROBE
    r = subprocess.run([sys.executable, "-c", wrapper, "run", "--dir", str(d), "--interval", "0.1", "--",
                        sys.executable, "-c", code, str(d)], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert marker.read_text() == "ran"
    assert len(pickles(d)) == 1


def test_signals_reach_the_command(tmp_path):
    ready = tmp_path / "ready"
    code = textwrap.dedent("""
        import os, signal, sys, time
        signal.signal(signal.SIGTERM, lambda *a: sys.exit(42))
        open(sys.argv[1], "w").write(str(os.getpid()))
        time.sleep(60)
    """)
    args = [sys.executable, "-m", "gpufrag_probe", "run", "--dir", str(tmp_path / "d"), "--",
            sys.executable, "-c", code, str(ready)]
    proc = subprocess.Popen(args, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: ready.exists() and ready.read_text(), "the command to start")
        assert int(ready.read_text()) == proc.pid  # the command is the process we started
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 42
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_usage_errors(tmp_path):
    env = child_env()
    for args, code in ((["run", "--dir", str(tmp_path)], 2), (["run", "--dir", str(tmp_path), "--"], 2),
                       (["nope"], 2), ([], 2),
                       (["run", "--dir", str(tmp_path), "--", "/nonexistent/command"], 127)):
        r = subprocess.run([sys.executable, "-m", "gpufrag_probe"] + args, env=env, capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == code, (args, r.stderr)


def test_environment():
    class A:
        dir, interval, instance, model, keep, max_entries, no_history, no_stacks = "d", 5.0, None, None, 1, None, True, True
    env = cli.environment(A, ["python3", "-m", "sglang.launch_server", "--model-path", "org/m"],
                          {"PYTHONPATH": "/x", "GPUFRAG_PROBE_INSTANCE": "kept"})
    assert env["GPUFRAG_PROBE_DIR"] == os.path.abspath("d")
    assert env["GPUFRAG_PROBE_INTERVAL"] == "5.0" and env["GPUFRAG_PROBE_KEEP"] == "1"
    assert env["GPUFRAG_PROBE_HISTORY"] == "0" and env["GPUFRAG_PROBE_STACKS"] == "0"
    assert "GPUFRAG_PROBE_MAX_ENTRIES" not in env
    assert env["GPUFRAG_PROBE_INSTANCE"] == "kept" and env["GPUFRAG_PROBE_MODEL"] == "org/m"
    assert env["PYTHONPATH"] == cli.BOOT_DIR + os.pathsep + "/x"
    assert os.path.isfile(os.path.join(cli.BOOT_DIR, "sitecustomize.py"))
    assert cli.model_of_command(["vllm", "serve", "a/b"]) == "a/b"
    assert cli.model_of_command(["python", "-m", "vllm.entrypoints.cli.main", "serve", "a/b"]) == "a/b"


def _run_help(args):
    # COLUMNS: argparse wraps to the terminal, also inside a word at a hyphen.
    r = subprocess.run([sys.executable, "-m", "gpufrag_probe"] + args, env=child_env(COLUMNS=1000), capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 0, (args, r.stderr)
    return r.stdout


def test_help_lists_every_option_with_its_default_and_variable(tmp_path):
    """run -h / --help (with or without the command) lists each option,
    its default and the variable it sets, which is the one environment()
    sets for it."""
    from gpufrag_probe import _config
    outs = [_run_help(a) for a in (["run", "-h"], ["run", "--help"], ["run", "--dir", "d", "-h", "--", "true"],
                                   ["-h"], ["--help"])]
    # argparse wraps lines: compare with runs of blanks collapsed.
    outs = [" ".join(o.split()) for o in outs]
    parser = cli._parser()
    flags = [a.option_strings[-1] for a in parser._actions if a.option_strings and a.dest != "help"]
    assert flags == ["--dir", "--interval", "--instance", "--model", "--keep", "--max-entries", "--no-history",
                     "--no-stacks"]
    defaults = {"--interval": "default: 30;", "--keep": "default: 5;", "--max-entries": "default: 20000;",
                "--instance": "default: POD_NAME", "--model": "default: COMMAND's --served-model-name"}
    # The value each option hands COMMAND, as environment() sets it.
    given = {"--dir": "d", "--interval": "7", "--instance": "i", "--model": "m", "--keep": "3",
             "--max-entries": "9"}
    for flag in flags:
        argv = ["--dir", "d"]
        if flag != "--dir":
            argv += [flag, given[flag]] if flag in given else [flag]
        env = cli.environment(parser.parse_args(argv), ["true"], {})
        base = cli.environment(parser.parse_args(["--dir", "d"]), ["true"], {})
        changed = {k: v for k, v in env.items() if base.get(k) != v or k == _config.ENV_DIR and flag == "--dir"}
        (var,) = [k for k in changed if k.startswith("GPUFRAG_PROBE_")]
        for out in outs:
            opts = out[out.index("show this help message and exit"):]
            line = opts[opts.index(flag + " "):]
            line = line[:line.index(")")]
            assert ("sets " + var) in line, (flag, var, line)
            if flag != "--dir":
                assert "default: " in line, (flag, line)
            if flag in defaults:
                assert defaults[flag] in line, (flag, line)
    # The figures come from _config, not from the help's own text.
    assert "%g" % _config.DEFAULT_INTERVAL_S == "30" and _config.DEFAULT_KEEP == 5
    assert _config.DEFAULT_MAX_ENTRIES == 20000


def test_run_without_command_is_still_a_usage_error(tmp_path):
    r = subprocess.run([sys.executable, "-m", "gpufrag_probe", "run", "--dir", str(tmp_path)], env=child_env(),
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "usage:" in r.stderr and r.stdout == ""
