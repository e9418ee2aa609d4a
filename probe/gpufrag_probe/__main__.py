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


# OPTIONS: every option of `run` but --dir: (dest, flags, metavar or None
# for a switch, the GPUFRAG_PROBE_* variable it sets for COMMAND, the value
# it sets for a switch, argparse type, meaning, default). The help text
# and environment() both read it, so the help names the variable each
# option sets.
OPTIONS = (
    ("interval", "--interval", "S", _config.ENV_INTERVAL, None,
     _checked(lambda v: _config.check_number("interval_s", v)),
     "seconds between periodic dumps, %s" % _config.accepted("interval_s"), "%g" % _config.DEFAULT_INTERVAL_S),
    ("instance", "--instance", "I", _config.ENV_INSTANCE, None, _checked(_label),
     "the exporter's instance label", "POD_NAME, else the host name"),
    ("model", "--model", "M", _config.ENV_MODEL, None, _checked(_label),
     "the exporter's model label",
     "COMMAND's --served-model-name, else vllm serve MODEL, else --model, else --model-path, else unknown"),
    ("keep", "--keep", "N", _config.ENV_KEEP, None, _checked(lambda v: _config.check_number("keep", v)),
     "OOM snapshots kept per file name in DIR/%s, %s" % (_config.OOM_SUBDIR, _config.accepted("keep")),
     "%d" % _config.DEFAULT_KEEP),
    ("max_entries", "--max-entries", "N", _config.ENV_MAX_ENTRIES, None,
     _checked(lambda v: _config.check_number("max_entries", v)),
     "allocator history entries kept per device, %s" % _config.accepted("max_entries"),
     "%d" % _config.DEFAULT_MAX_ENTRIES),
    ("no_history", "--no-history", None, _config.ENV_HISTORY, "0", None,
     "record no allocator history: the exporter then counts no OOMs; OOM snapshots are still written",
     "history recorded"),
    ("no_stacks", "--no-stacks", None, _config.ENV_STACKS, "0", None,
     "record the history without Python stacks: cheaper, but the analysis names no call sites",
     "stacks recorded"),
)

DESCRIPTION = """Runs COMMAND with the gpufrag probe started in every Python process it
starts. Each option sets, for COMMAND, the GPUFRAG_PROBE_* variable named
with it; without the option the variable's value in this environment
applies, else the default. A value out of range is a usage error (exit 2)."""


def _prog():
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if not name or name in ("__main__.py", "-c"):
        name = "python -m gpufrag_probe"
    return name + " run"


def _parser():
    p = argparse.ArgumentParser(prog=_prog(), usage=USAGE, description=DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dir", required=True, metavar="DIR", type=_checked(_config.check_directory),
                   help="directory for the snapshot files (required; sets %s)" % _config.ENV_DIR)
    for dest, flag, metavar, env, value, kind, meaning, default in OPTIONS:
        text = "%s (default: %s; sets %s%s)" % (meaning, default, env, "" if value is None else "=" + value)
        if metavar is None:
            p.add_argument(flag, dest=dest, action="store_true", help=text)
        else:
            p.add_argument(flag, dest=dest, metavar=metavar, type=kind, help=text)
    return p


def help_text():
    """`run --help`: every option with its default and variable."""
    return _parser().format_help()


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
    for dest, _, metavar, key, value, _, _, _ in OPTIONS:
        val = getattr(args, dest)
        if metavar is None and val:
            env[key] = value
        elif metavar is not None and val is not None:
            env[key] = str(val)
    if not env.get(_config.ENV_MODEL):
        m = model_of_command(cmd)
        if m:
            env[_config.ENV_MODEL] = m
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = BOOT_DIR + (os.pathsep + old if old else "")
    return env


def run(argv):
    if "--" not in argv and ("-h" in argv or "--help" in argv):
        sys.stdout.write(help_text())
        return 0
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
        sys.stdout.write("usage: %s\n\n%s\n\n%s" % (USAGE, __doc__, help_text()))
        return 0 if argv else 2
    if argv[0] != "run":
        sys.stderr.write("gpufrag_probe: unknown command %r\nusage: %s\n" % (argv[0], USAGE))
        return 2
    return run(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
