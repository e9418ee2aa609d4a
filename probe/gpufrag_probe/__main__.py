"""python -m gpufrag_probe run --dir DIR [options] -- COMMAND ARGS...

Runs COMMAND (it replaces this process: same pid, same signals, its exit
status) with the probe started in every Python process it and its children
start: PYTHONPATH gets, in front, a directory whose sitecustomize.py starts
the probe from GPUFRAG_PROBE_* (and then runs any sitecustomize it
shadows). Processes started by multiprocessing (spawn, forkserver, fork)
get it too. Python started with -I, -E or -S skips sitecustomize and PYTHONPATH,
so it gets no probe."""
import argparse
import os
import sys

from . import _config, _labels

BOOT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_boot")

USAGE = "python -m gpufrag_probe run --dir DIR [options] -- COMMAND [ARGS...]"


def _checked(check):
    """An argparse type: check(value), its ValueError an argparse error
    naming the option (exit 2, as for any bad option)."""
    def parse(value):
        try:
            return check(value)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    return parse


def _label(value):
    why = _config.label_problem(value)
    if why is not None:
        raise ValueError(why)
    return value


def _parser():
    p = argparse.ArgumentParser(prog="python -m gpufrag_probe run", usage=USAGE,
                                description="Run COMMAND with the gpufrag probe in its Python processes.")
    p.add_argument("--dir", required=True, type=_checked(_config.check_directory), help="directory for the snapshots (%s)" % _config.ENV_DIR)
    p.add_argument("--interval", type=_checked(lambda v: _config.check_number("interval_s", v)),
                   help="seconds between dumps, %s (default %g)" % (_config.accepted("interval_s"), _config.DEFAULT_INTERVAL_S))
    p.add_argument("--instance", type=_checked(_label), help="instance label (default: POD_NAME, else the host name)")
    p.add_argument("--model", type=_checked(_label), help="model label (default: the command's --served-model-name, "
                                   "vllm serve MODEL, --model or --model-path)")
    p.add_argument("--keep", type=_checked(lambda v: _config.check_number("keep", v)),
                   help="OOM snapshots kept per process, %s (default %d)" % (_config.accepted("keep"), _config.DEFAULT_KEEP))
    p.add_argument("--max-entries", type=_checked(lambda v: _config.check_number("max_entries", v)),
                   help="allocator history entries per device, %s (default %d)" % (
                       _config.accepted("max_entries"), _config.DEFAULT_MAX_ENTRIES))
    p.add_argument("--no-history", action="store_true", help="do not record the allocator's history")
    p.add_argument("--no-stacks", action="store_true",
                   help="record the history without Python stacks (cheaper; no call sites in the analysis)")
    return p


def model_of_command(cmd):
    """The model of a server command line, seen as its Python process will
    see sys.argv (python [-m MODULE] ARGS: MODULE then ARGS)."""
    argv = list(cmd)
    if len(argv) >= 3 and os.path.basename(argv[0]).startswith("python") and argv[1] == "-m":
        argv = argv[2:]
    return _labels.model_from_argv(argv)


def environment(args, cmd, env):
    env = dict(env)
    env[_config.ENV_DIR] = os.path.abspath(args.dir)
    for key, val in ((_config.ENV_INTERVAL, args.interval), (_config.ENV_INSTANCE, args.instance),
                     (_config.ENV_MODEL, args.model), (_config.ENV_KEEP, args.keep),
                     (_config.ENV_MAX_ENTRIES, args.max_entries)):
        if val is not None:
            env[key] = str(val)
    if args.no_history:
        env[_config.ENV_HISTORY] = "0"
    if args.no_stacks:
        env[_config.ENV_STACKS] = "0"
    if not env.get(_config.ENV_MODEL):
        m = model_of_command(cmd)
        if m:
            env[_config.ENV_MODEL] = m
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = BOOT_DIR + (os.pathsep + old if old else "")
    return env


def run(argv):
    if "--" not in argv:
        sys.stderr.write("usage: %s\n(the command follows --)\n" % USAGE)
        return 2
    i = argv.index("--")
    args = _parser().parse_args(argv[:i])
    cmd = argv[i + 1:]
    if not cmd:
        sys.stderr.write("usage: %s\n(no command after --)\n" % USAGE)
        return 2
    env = environment(args, cmd, os.environ)
    try:
        os.makedirs(env[_config.ENV_DIR], exist_ok=True)
    except OSError as e:  # the server still runs; the probe logs its own errors
        sys.stderr.write("gpufrag_probe: warning: cannot create %s: %s\n" % (env[_config.ENV_DIR], e))
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        if os.name == "posix":
            os.execvpe(cmd[0], cmd, env)  # does not return
        import subprocess
        return subprocess.call(cmd, env=env)
    except FileNotFoundError as e:
        sys.stderr.write("gpufrag_probe: %s: %s\n" % (cmd[0], e.strerror))
        return 127
    except OSError as e:
        sys.stderr.write("gpufrag_probe: %s: %s\n" % (cmd[0], e.strerror))
        return 126


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write("usage: %s\n\n%s\n" % (USAGE, __doc__))
        return 0 if argv else 2
    if argv[0] != "run":
        sys.stderr.write("gpufrag_probe: unknown command %r\nusage: %s\n" % (argv[0], USAGE))
        return 2
    return run(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
