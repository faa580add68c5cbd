#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A running recording's metrics through node_exporter's textfile collector into Prometheus.

Usage: prometheus_textfile.py LOADERLENS WORKLOAD

Starts Debian's prometheus-node-exporter (textfile collector only) and prometheus on free ports of
127.0.0.1, in a temporary directory, scraping every second; runs `loaderlens record
--metrics-textfile DIR/loaderlens.prom` over the test workload (3 workers each map a 64 MiB file
and write 16 MiB, then hold still) as SLURM job 4242 step 0 (the variables only: no SLURM here);
asks Prometheus's HTTP API for the job's Σ PSS with PromQL and checks it against the recording
itself (`loaderlens export --format json` at the tick the scraped textfile came from) to 1%
(docs/metrics.md). Then ends the workload and checks that Prometheus sees
loaderlens_recording_live 0; serves the run's OpenMetrics export to Prometheus too, and runs every
query of the Grafana dashboard (grafana_dashboard.py; LOADERLENS_GRAFANA_DASHBOARD=FILE for
another file) over the run: each must return data. Everything it started is stopped and the
directory removed, also when a check fails, on SIGTERM, or at the deadline
(LOADERLENS_PROMETHEUS_DEADLINE, 120 s).

Skips (prints "LOADERLENS-SKIP: reason", exit 0) when prometheus or prometheus-node-exporter is
not installed; with LOADERLENS_STRICT=1 (CI) prints "LOADERLENS-MISSING: reason" and
exits 1 instead. LOADERLENS_PROMETHEUS_KEEP=1 keeps the temporary directory.
"""

import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

JOB = "4242"
# The PromQL of docs/metrics.md: Σ PSS of a job, over its nodes, roles and worker slots.
QUERY = f'sum by (slurm_job) (loaderlens_process_pss_bytes{{slurm_job="{JOB}"}})'
SAMPLE_TIME = f'max(loaderlens_sample_timestamp_seconds{{slurm_job="{JOB}"}})'
TOOLS = ["prometheus", "prometheus-node-exporter"]

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.dont_write_bytecode = True  # no __pycache__ in tests/
from script_harness import check, free_port, log, poll, precondition_missing, run_script  # noqa: E402
import grafana_dashboard  # noqa: E402

class Run:
    """The temporary directory and every process started in it."""

    def __init__(self, loaderlens, workload):
        self.loaderlens, self.workload = loaderlens, workload
        self.tmp = tempfile.mkdtemp(prefix="loaderlens-prometheus.")
        self.textfiles = os.path.join(self.tmp, "textfiles")
        os.mkdir(self.textfiles)
        self.procs = {}  # name -> Popen (each in a session of its own)
        self.lines = []  # the recorder's stdout (the workload's progress lines)
        self.exporter_port, self.prometheus_port = free_port(), free_port()
        self.export = ExportServer()

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    def spawn(self, name, args, env=None, capture=False):
        # A session of its own: stop() kills what is left of it, and only that.
        with open(self.path(f"{name}.log"), "wb") as log_file:
            p = subprocess.Popen(args, stdout=subprocess.PIPE if capture else log_file,
                                 stderr=log_file, stdin=subprocess.DEVNULL, env=env,
                                 start_new_session=True)
        self.procs[name] = p
        if capture:
            threading.Thread(target=self._read, args=(p,), daemon=True).start()
        return p

    def _read(self, p):
        for line in p.stdout:
            self.lines.append(line.decode(errors="replace").rstrip("\n"))

    def api(self, endpoint, **params):
        url = f"http://127.0.0.1:{self.prometheus_port}{endpoint}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()

    def query(self, expr, at=None):
        """An instant query: the result vector ([] when nothing matches)."""
        params = {"query": expr}
        if at is not None:
            params["time"] = f"{at:.3f}"
        status, body = self.api("/api/v1/query", **params)
        reply = json.loads(body)
        if status != 200 or reply.get("status") != "success":
            raise RuntimeError(f"query {expr}: {status} {body[:300]}")
        return reply["data"]["result"]

    def query_range(self, expr, start, end):
        status, body = self.api("/api/v1/query_range", query=expr, start=f"{start:.3f}",
                                end=f"{end:.3f}", step="1")
        reply = json.loads(body)
        if status != 200 or reply.get("status") != "success":
            raise RuntimeError(f"query_range {expr}: {status} {body[:300]}")
        return reply["data"]["result"]

    def label_values(self, label, selector, start, end):
        """What Grafana's label_values(SELECTOR, LABEL) asks for."""
        status, body = self.api(f"/api/v1/label/{label}/values", **{
            "match[]": selector, "start": f"{start:.3f}", "end": f"{end:.3f}"})
        return json.loads(body)["data"]

    def ready(self):
        try:
            return self.api("/-/ready")[0] == 200
        except (urllib.error.URLError, ConnectionError, OSError):
            return False

    def stop(self):
        # The recorder first (it forwards SIGTERM to the workload and finishes the recording),
        # then the exporter and Prometheus; whatever is left of a session is killed.
        for name in ("recorder", "node_exporter", "prometheus"):
            p = self.procs.get(name)
            if p is None or p.poll() is not None:
                continue
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                log(f"      {name} ignored SIGTERM for 10 s: SIGKILL")
        for name, p in self.procs.items():
            try:
                os.killpg(p.pid, signal.SIGKILL)  # the session it leads (pid = its pgid)
            except ProcessLookupError:
                pass
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                log(f"      {name} (pid {p.pid}) did not exit after SIGKILL")
        self.export.shutdown()
        if os.environ.get("LOADERLENS_PROMETHEUS_KEEP") == "1":
            log(f"      kept {self.tmp}")
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def show_logs(self):
        for name in ("node_exporter", "prometheus", "recorder"):
            path = self.path(f"{name}.log")
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    tail = f.read()[-2000:]
                log(f"----- {name}.log (end)\n{tail}")


class ExportServer(http.server.ThreadingHTTPServer):
    """Serves `loaderlens export --format openmetrics` once set (503 before): the findings are in
    the export only, and the dashboard has a panel for them. Prometheus scrapes it as job
    loaderlens_export."""

    def __init__(self):
        self.body = None

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(handler):  # noqa: N805
                body = self.body
                handler.send_response(200 if body else 503)
                handler.send_header("Content-Type", "application/openmetrics-text; "
                                    "version=1.0.0; charset=utf-8")
                handler.send_header("Content-Length", str(len(body or b"")))
                handler.end_headers()
                handler.wfile.write(body or b"")

            def log_message(handler, *args):  # noqa: N805
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.port = self.server_address[1]
        threading.Thread(target=self.serve_forever, daemon=True).start()


def value_of(result):
    return float(result[0]["value"][1]) if result else None


def body(r):
    t0 = time.monotonic()
    data = r.path("data.bin")
    with open(data, "wb") as f:  # 64 MiB, no zero page
        f.write(bytes(range(1, 256)) * (64 * 1024 * 1024 // 255 + 1))
        f.truncate(64 * 1024 * 1024)
    prom = os.path.join(r.textfiles, "loaderlens.prom")

    r.spawn("node_exporter", ["prometheus-node-exporter",
                              f"--web.listen-address=127.0.0.1:{r.exporter_port}",
                              "--collector.disable-defaults", "--collector.textfile",
                              f"--collector.textfile.directory={r.textfiles}"])
    with open(r.path("prometheus.yml"), "w") as f:
        f.write("global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                "scrape_configs:\n"
                "  - job_name: node\n"
                f"    static_configs: [{{targets: ['127.0.0.1:{r.exporter_port}']}}]\n"
                "  - job_name: loaderlens_export\n"
                f"    static_configs: [{{targets: ['127.0.0.1:{r.export.port}']}}]\n")
    r.spawn("prometheus", ["prometheus", f"--config.file={r.path('prometheus.yml')}",
                           f"--storage.tsdb.path={r.path('tsdb')}",
                           f"--web.listen-address=127.0.0.1:{r.prometheus_port}"])
    poll("Prometheus /-/ready", r.ready, timeout=20)
    log(f"      node_exporter :{r.exporter_port}, Prometheus :{r.prometheus_port} ready after "
        f"{time.monotonic() - t0:.1f} s")

    env = dict(os.environ, SLURM_JOB_ID=JOB, SLURM_STEP_ID="0", SLURM_PROCID="0")
    db = r.path("run.db")
    t_start = time.time()
    # --mem-limit: the views' limits are series too (the dashboard holds each view against it).
    r.spawn("recorder", [r.loaderlens, "record", "-q", "-o", db, "--mem-limit", "4GiB",
                         "--metrics-textfile", prom, "--",
                         r.workload, "--file", data, "--workers", "3", "--anon-mib", "16",
                         "--hold-ms", "60000"], env=env, capture=True)
    poll("the workers to hold their memory (ready 0)", lambda: "ready 0" in r.lines, timeout=30)
    t_ready = time.monotonic()

    # Until Prometheus has scraped a textfile that shows the three workers holding still.
    def scraped():
        workers = r.query(f'loaderlens_process_pss_bytes{{slurm_job="{JOB}",role="worker"}}')
        return len(workers) == 3 and all(float(w["value"][1]) > 16 << 20 for w in workers)
    poll("3 worker slots in Prometheus", scraped, timeout=30, interval=0.25)
    log(f"      first sample with the 3 workers queryable {time.monotonic() - t_ready:.1f} s "
        "after they were ready")
    labels = r.query(f'loaderlens_tree_pss_bytes{{slurm_job="{JOB}"}}')[0]["metric"]
    check("labels kept as written (slurm_job, not renamed to exported_job) beside the target's",
          labels.get("slurm_job") == JOB and labels.get("slurm_step") == "0"
          and labels.get("job") == "node" and "exported_job" not in labels, str(labels))
    check("node_textfile_scrape_error is 0",
          value_of(r.query("node_textfile_scrape_error")) == 0.0)

    # Three measurements a second apart: each query and the newest sample time of its scrape,
    # evaluated at one instant (so from one scrape of one textfile).
    measured = []
    for _ in range(3):
        at = time.time()
        total, when = value_of(r.query(QUERY, at)), value_of(r.query(SAMPLE_TIME, at))
        tree = value_of(r.query(f'sum by (slurm_job) (loaderlens_tree_pss_bytes{{slurm_job="{JOB}"}})',
                                at))
        measured.append((total, when, tree))
        time.sleep(1)

    # End the hold (SIGUSR1 to the workload's main, the recorder's child): a normal end.
    workload_main = int(open(f"/proc/{r.procs['recorder'].pid}/task/"
                             f"{r.procs['recorder'].pid}/children").read().split()[0])
    os.kill(workload_main, signal.SIGUSR1)
    rc = r.procs["recorder"].wait(timeout=30)
    check("the recorded command ended normally (exit 0)", rc == 0, f"exit {rc}")
    poll("Prometheus to see loaderlens_recording_live 0",
         lambda: value_of(r.query(f'loaderlens_recording_live{{slurm_job="{JOB}"}}')) == 0.0,
         timeout=15)
    check("loaderlens_recording_live 0 scraped after the end", True)

    # The recording's own Σ PSS at the tick each scraped textfile came from: the newest rollup
    # tick at or before the scrape's newest sample (a rollup tick committed after the textfile was
    # written may be newer; the tree holds still, so they agree to well within 1%).
    exported = subprocess.run([r.loaderlens, "export", "--format", "json", db],
                              capture_output=True, check=True)
    recording = json.loads(exported.stdout)
    start_s = int(recording["meta"]["start_unix_ns"]) / 1e9
    ticks = [(start_s + p["t_ms"] / 1000, p["kib"] * 1024) for p in recording["tree"]["pss"]
             if p["kib"] is not None]
    for i, (total, when, tree) in enumerate(measured):
        before = [bytes_ for t, bytes_ in ticks if t <= when + 0.0005]
        if not check(f"measurement {i + 1}: Prometheus has a value and a sample time",
                     total is not None and when is not None and before, f"{total} at {when}"):
            continue
        want = before[-1]
        error = abs(total - want) / want
        check(f"measurement {i + 1}: Σ PSS of job {JOB} from PromQL within 1% of the recording",
              error <= 0.01, f"Prometheus {total:.0f} B, recording {want:.0f} B at its tick, "
              f"{100 * error:.3f}%; {QUERY}")
        check(f"measurement {i + 1}: Σ over slots = loaderlens_tree_pss_bytes", total == tree,
              f"{total:.0f} vs {tree}")
    # What the kernel holds: the file once (shared by 3) plus 3 x 16 MiB written by the workers.
    # (plus main's and the workers' binary, libc and stack: a few MiB).
    check("Σ PSS is the file once plus each worker's own memory (+ up to 8 MiB)",
          measured[0][0] is not None
          and (64 + 3 * 16) * 2**20 <= measured[0][0] <= (64 + 3 * 16 + 8) * 2**20,
          f"{measured[0][0]} B")
    dashboard(r, db, t_start)


def dashboard(r, db, t_start):
    """Every query of the Grafana dashboard, as Grafana sends it, returns data from this run."""
    t0 = time.monotonic()
    dash = grafana_dashboard.load()
    found = grafana_dashboard.problems(dash)
    if not check("the Grafana dashboard's structure", not found, "; ".join(found)):
        return
    # The findings are in the export only: serve it (scraped each second) and wait for it.
    r.export.body = subprocess.run([r.loaderlens, "export", "--format", "openmetrics", db],
                                   capture_output=True, check=True).stdout
    poll("Prometheus to scrape the export",
         lambda: r.query('loaderlens_recording_info{job="loaderlens_export"}'), timeout=15)
    end = time.time()
    start = end - int(end - t_start + 1)  # so the range's last step is `end` (the export's scrape)
    # Every label variable as "All" (Grafana's allValue .*); each variable's own query listed.
    values = {v: ".*" for v in grafana_dashboard.label_variables(dash)}
    listed = {}
    for name, selector, label in grafana_dashboard.variable_queries(dash):
        listed[name] = r.label_values(label, grafana_dashboard.substitute(selector, values),
                                      start, end)
        check(f"variable ${name}: label_values(..., {label}) lists values", listed[name],
              str(listed[name]))
    # A repeated panel is drawn once per value its menu lists: each of them must show something
    # (the limit may be absent: a cgroup without one).
    for p in grafana_dashboard.all_panels(dash):
        var = p.get("repeat")
        for value in listed.get(var, []) if var else []:
            one = dict(values, **{var: re.escape(value)})
            counts = [len(r.query_range(grafana_dashboard.substitute(t["expr"], one), start, end))
                      for t in p["targets"]]
            check(f"panel {p['id']} repeated for {var}={value}: data", any(counts),
                  "series per target: " + str(counts))
    for where, expr, instant, legend in grafana_dashboard.queries(dash):
        promql = grafana_dashboard.substitute(expr, values)
        # A timeseries panel asks for the range (the run, step 1 s), a table or gauge the instant.
        result = r.query(promql, end) if instant else r.query_range(promql, start, end)
        # Each label the legend names must be on a series: a misspelt "by (slott)" returns data.
        missing = [name for name in re.findall(r"\{\{\s*(\w+)\s*\}\}", legend)
                   if not any(name in series["metric"] for series in result)]
        check(f"{where}: data from the recording", result and not missing,
              f"{len(result)} series{', legend labels missing: ' + str(missing) if missing else ''}"
              f"; {promql}")
    log(f"      the dashboard's queries: {time.monotonic() - t0:.1f} s")


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        precondition_missing("not installed: " + " ".join(missing) + " (Debian packages "
                             "prometheus prometheus-node-exporter; scripts/setup.sh)")
    args = [os.path.abspath(a) for a in sys.argv[1:]]

    def start():
        r = Run(*args)
        log(f"temporary directory {r.tmp}")
        return r

    run_script(start, body, "LOADERLENS_PROMETHEUS_DEADLINE", 120)


if __name__ == "__main__":
    main()
