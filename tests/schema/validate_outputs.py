# SPDX-License-Identifier: MIT
"""Every JSON output of the CLI against its JSON Schema in docs/schema/, validated by
python3-jsonschema (an oracle that shares no code with the C++ that writes the JSON), on real
output: a recording of the test workload, two `replay` runs as two SLURM "nodes" of one job, their
`merge`, `report --part`, `ps`, `load` and a one-setting `advise`. Also:
  - every `--json` / `--format json` the CLI offers (read from each subcommand's --help) has a row
    in OUTPUTS, and every schema file is used: a new JSON output without a schema fails;
  - the output's format_version is the schema's const (a bump needs the schema's too);
  - each schema refuses an output without format_version or with an unknown top-level key (it can
    fail at all);
  - absolute time: the unix_ns of the CSV exports and started_unix_ns lie between the wall clock
    read before and after the recording, and agree with t_s;
  - the report schema's finding kinds are docs/findings.md's table.

usage: validate_outputs.py LOADERLENS TEST_WORKLOAD
"""

import csv
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.dont_write_bytecode = True
import script_harness  # noqa: E402
from script_harness import check, log  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SCHEMAS = os.path.join(ROOT, "docs", "schema")
# (how the CLI is asked for it, its schema): one row per JSON output the CLI has.
OUTPUTS = {"report --json": "report", "export --format json": "export", "ps --json": "ps",
           "load --json": "load", "advise --json": "advise"}


def run(argv, env=None, ok=(0,)):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, **(env or {})))
    if r.returncode not in ok:
        raise RuntimeError(f"{' '.join(argv)}: exit {r.returncode}: {r.stderr.strip()[-400:]}")
    return r.stdout


def json_outputs_offered(cli):
    """`CMD --json` and `CMD --format json` as the help pages offer them."""
    top = run([cli, "--help"])
    commands = re.findall(r"^  ([a-z][a-z-]*)  ", top.split("Subcommands:")[1], re.M)
    offered = set()
    for c in commands:
        text = run([cli, c, "--help"])
        if re.search(r"^\s+--json\b", text, re.M):
            offered.add(f"{c} --json")
        m = re.search(r"--format TEXT:\{([^}]*)\}", text)
        if m and "json" in m.group(1).split(","):
            offered.add(f"{c} --format json")
    return commands, offered


class Outputs:
    def __init__(self, cli, workload):
        self.cli, self.workload = cli, workload
        self.tmp_dir = tempfile.TemporaryDirectory(prefix="loaderlens-schema-")
        self.tmp = self.tmp_dir.name

    def path(self, name):
        return os.path.join(self.tmp, name)

    def show_logs(self):
        pass

    def stop(self):
        self.tmp_dir.cleanup()


def validator_for(name):
    import jsonschema
    with open(os.path.join(SCHEMAS, name + ".schema.json")) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema, jsonschema.Draft202012Validator(schema)


def validate(name, what, text):
    schema, v = validator_for(name)
    out = json.loads(text)
    errors = sorted(v.iter_errors(out), key=lambda e: list(e.absolute_path))
    detail = "; ".join(f"{'/'.join(map(str, e.absolute_path))}: {e.message[:160]}"
                       for e in errors[:5])
    check(f"{what} matches docs/schema/{name}.schema.json", not errors, detail)
    version = schema["properties"]["format_version"].get("const")
    check(f"{what}: format_version {out.get('format_version')} is the schema's {version}",
          version is not None and out.get("format_version") == version)
    # The schema can fail: without format_version, or with a key it does not know.
    dropped = {k: val for k, val in out.items() if k != "format_version"}
    extra = dict(out, not_a_key=1)
    check(f"{what}: the schema refuses it without format_version or with an unknown key",
          not v.is_valid(dropped) and not v.is_valid(extra))
    return out


def check_times(what, rows, t0, t1, started):
    """unix_ns of each row = started + t_s (t_s has 3 decimals: whole ms), the first in [t0, t1]."""
    bad = [r for r in rows if int(r["unix_ns"]) != started + round(float(r["t_s"]) * 1000) * 10**6]
    check(f"{what}: unix_ns = started_unix_ns + t_s on every row", rows and not bad,
          f"{len(rows)} rows, first disagreeing: {bad[:1]}")
    first = min(int(r["unix_ns"]) for r in rows) if rows else 0
    check(f"{what}: the first sample's unix_ns lies between the wall clock before and after",
          t0 <= first <= t1, f"{t0} <= {first} <= {t1}")


def check_csv_times(fmt, text, t0, t1, started):
    rows = list(csv.DictReader(io.StringIO(text)))
    check(f"export --format {fmt}: unix_ns is the last column",
          rows and list(rows[0].keys())[-1] == "unix_ns")
    check_times(f"export --format {fmt}", rows, t0, t1, started)


def body(o):
    cli = o.cli
    commands, offered = json_outputs_offered(cli)
    check("every JSON output the CLI offers has a schema", offered == set(OUTPUTS),
          f"offered by --help of {len(commands)} subcommands: {sorted(offered)}; "
          f"with a schema: {sorted(OUTPUTS)}")
    files = {f[:-len(".schema.json")] for f in os.listdir(SCHEMAS) if f.endswith(".schema.json")}
    check("every schema in docs/schema/ is an output's", files == set(OUTPUTS.values()),
          str(sorted(files)))

    # A recording of the test workload, the wall clock read around it.
    data = o.path("data.bin")
    with open(data, "wb") as f:
        f.write(os.urandom(4 << 20))
    rec = o.path("workload.db")
    t0 = time.time_ns()
    run([cli, "record", "-q", "-o", rec, "--", o.workload, "--file", data, "--workers", "2",
         "--anon-mib", "4", "--hold-ms", "300"])
    t1 = time.time_ns()
    report = validate("report", "report --json (workload)", run([cli, "report", "--json", rec]))
    exported = validate("export", "export --format json (workload)",
                        run([cli, "export", "--format", "json", rec]))
    started = report["started_unix_ns"]
    check("started_unix_ns lies between the wall clock before and after the recording",
          isinstance(started, int) and t0 <= started <= t1, f"{t0} <= {started} <= {t1}")
    check("export's started_unix_ns is the report's", exported["started_unix_ns"] == started)
    check_csv_times("csv", run([cli, "export", "--format", "csv", rec]), t0, t1, started)

    # A recording cut by SIGKILL (recorder and workload, its session) once the workload held its
    # memory: the report's `cut` object and the processes' ends as such a report has them.
    cut = o.path("cut.db")
    p = subprocess.Popen([cli, "record", "-q", "-o", cut, "--", o.workload, "--file", data,
                          "--workers", "1", "--anon-mib", "2", "--hold-ms", "60000"],
                         stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        for line in p.stdout:
            if line.startswith("ready"):
                break
    finally:
        os.killpg(p.pid, 9)
        p.wait()
    cut_report = validate("report", "report --json (cut by SIGKILL)",
                          run([cli, "report", "--json", cut]))
    check("the killed recording's report has a cut object (the schema saw one)",
          isinstance(cut_report["cut"], dict), str(cut_report["cut"]))

    # Two replays as two nodes of one SLURM job, their merge, one part of it.
    dataset = o.path("d.npy")
    run([cli, "mkdata", "npy", "--count", "512", "--shape", "64x64", dataset])
    parts = []
    t0 = time.time_ns()
    for node, workers, epochs in (("n1", "2", "2"), ("n2", "1", "1")):
        parts.append(o.path(node + ".db"))
        env = {"SLURM_JOB_ID": "77", "SLURM_STEP_ID": "0", "SLURM_PROCID": "0",
               "SLURMD_NODENAME": node}
        run([cli, "replay", "-q", "-o", parts[-1], "--workers", workers, "--epochs", epochs,
             "--mem-limit", "2GiB", dataset], env=env)
    t1 = time.time_ns()
    job = o.path("job.db")
    run([cli, "merge", "-q", *parts, "-o", job])
    replay = validate("report", "report --json (replay: loader, residency)",
                      run([cli, "report", "--json", parts[0]]))
    check("the replay's report has a loader and residency (the schema saw them)",
          "loader" in replay and replay["residency"])
    # Residency rows from the replay, whose markers make the recorder sample every tier: the
    # workload above lives ~0.4 s, and on a loaded machine its file was mapped after the
    # residency tier's first run (the next one is 1 s later): 0 rows in a local CI run.
    check_csv_times("residency-csv", run([cli, "export", "--format", "residency-csv", parts[0]]),
                    t0, t1, replay["started_unix_ns"])
    merged = validate("report", "report --json (merged)", run([cli, "report", "--json", job]))
    check("the merged report has its parts", merged["merged"] and len(merged["merged"]["parts"]) == 2)
    # A merged recording's axis starts at its earliest part; one part's report is on its own.
    starts = {p["name"]: p["start_unix_ns"] for p in merged["merged"]["parts"]}
    check("the merged report's started_unix_ns is its earliest part's start",
          merged["started_unix_ns"] == min(starts.values()), f"{merged['started_unix_ns']}, {starts}")
    for name in ("n1", "n2"):
        part = validate("report", f"report --json --part {name} (merged)",
                        run([cli, "report", "--json", "--part", name, job]))
        check(f"report --part {name}: started_unix_ns is that part's start",
              part["started_unix_ns"] == starts.get(name))
    rows = list(csv.DictReader(io.StringIO(run([cli, "export", "--format", "csv", job]))))
    check_times("export --format csv (merged)", rows, t0, t1, merged["started_unix_ns"])
    validate("export", "export --format json (replay)",
             run([cli, "export", "--format", "json", parts[0]]))
    validate("export", "export --format json (merged)", run([cli, "export", "--format", "json", job]))

    validate("ps", "ps --json", run([cli, "ps", "--json", "--all"]))
    validate("load", "load --json", run([cli, "load", "--json", "--workers", "1", "--epochs", "1",
                                          dataset]))
    validate("advise", "advise --json (one setting)",
             run([cli, "advise", "--json", "-q", "--workers", "1", "--epochs", "1", "--budget",
                  "60s", "--persistent", "no", "--read", "mmap-view", "--mem-limit", "4G",
                  dataset]))

    # The schema's finding kinds are the documented ones (docs/findings.md's table).
    documented, in_table = [], False
    with open(os.path.join(ROOT, "docs", "findings.md")) as f:
        for line in f:
            if line.startswith("| kind |"):
                in_table = True
            elif in_table and line.startswith("| `"):
                documented.append(line[3:line.index("`", 3)])
            elif in_table and not line.startswith("|"):
                break
    schema, _ = validator_for("report")
    kinds = schema["properties"]["findings"]["items"]["properties"]["kind"]["enum"]
    check("report schema's finding kinds are docs/findings.md's", sorted(kinds) == sorted(documented)
          and len(documented) >= 16, f"schema only: {sorted(set(kinds) - set(documented))}, "
          f"docs only: {sorted(set(documented) - set(kinds))}")


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    try:
        import jsonschema  # noqa: F401
    except ImportError:
        script_harness.precondition_missing("python3-jsonschema is not installed (scripts/setup.sh)")
    cli, workload = (os.path.abspath(a) for a in sys.argv[1:])
    script_harness.run_script(lambda: Outputs(cli, workload), body,
                              "LOADERLENS_SCHEMA_DEADLINE", 240)


if __name__ == "__main__":
    main()
