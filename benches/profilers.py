"""The profilers compare-perf.sh runs side by side, and their command lines: one list for every
part of it, so that a tool added to one is in all."""

TOOLS = ["pkgmon", "pkgmon --stack-copy kernel", "pkgmon --stack-size 0", "perf -g", "perf dwarf"]
RATES = (1000, 4000, 10000)


def command(tool, pkgmon, hz, work):
    """The command line of `tool` sampling `work` (a command line) at `hz` into out.run."""
    f = ["-F", str(hz)]
    return {
        "pkgmon": [pkgmon, "-o", "out.run"] + f,
        "pkgmon --stack-copy kernel": [pkgmon, "-o", "out.run", "--stack-copy", "kernel"] + f,
        "pkgmon --stack-size 0": [pkgmon, "-o", "out.run", "--stack-size", "0"] + f,
        "perf -g": ["perf", "record", "-q", "-g", "-o", "out.run"] + f,
        "perf dwarf": ["perf", "record", "-q", "--call-graph", "dwarf", "-o", "out.run"] + f,
    }[tool] + ["--"] + work
