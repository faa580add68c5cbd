#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The Grafana dashboard (resources/grafana/loaderlens-dashboard.json) read as Grafana would.

Usage: grafana_dashboard.py [DASHBOARD]   (checks its structure only; exit 0 when it holds)

There is no Grafana to import it into (Debian 12 has no package), so its structure is checked
here: the JSON loads, panel ids are unique, every panel but a row has targets with a PromQL expr
on the `${datasource}` variable, grid positions fit 24 columns, and every variable a panel, a
query or a legend uses is defined. prometheus_textfile.py imports it to run every query against a
real Prometheus (queries(), variable_queries()); a query is turned into what Grafana sends by
substituting the variables as substitute() says.
"""

import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# LOADERLENS_GRAFANA_DASHBOARD: another file (to check that a broken query fails the tests).
DASHBOARD = os.environ.get("LOADERLENS_GRAFANA_DASHBOARD") or os.path.join(
    HERE, "..", "..", "resources", "grafana", "loaderlens-dashboard.json")
# Grafana's own variables the dashboard may use; each becomes a fixed range in substitute().
BUILTIN = {"__interval", "__rate_interval", "__range", "__interval_ms", "__range_s"}
FIXED_RANGE = "1m"
USE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]")
LABEL_VALUES = re.compile(r"^label_values\((.+),\s*(\w+)\)$", re.S)
DATASOURCE_UID = "${datasource}"


def load(path=DASHBOARD):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def all_panels(dash):
    """Every panel, those inside rows included."""
    for p in dash.get("panels", []):
        yield p
        yield from p.get("panels", [])


def used_variables(text):
    return {next(g for g in m.groups() if g) for m in USE.finditer(text)}


def strings(node):
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for v in node.values():
            yield from strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from strings(v)


def problems(dash):
    """What keeps the dashboard from importing or from querying: a list of sentences."""
    out = []
    for key, kind in (("panels", list), ("templating", dict), ("title", str), ("uid", str),
                      ("schemaVersion", int)):
        if not isinstance(dash.get(key), kind):
            out.append(f"top level: '{key}' missing or not a {kind.__name__}")
    if out:
        return out
    variables = dash["templating"].get("list", [])
    names = [v.get("name") for v in variables]
    defined = set(names)
    if len(defined) != len(names):
        out.append(f"variables defined twice: {names}")
    ds = [v for v in variables if v.get("name") == "datasource"]
    if not ds or ds[0].get("type") != "datasource" or ds[0].get("query") != "prometheus":
        out.append("no variable 'datasource' of type datasource over prometheus")
    for v in variables:
        if v.get("type") != "query":
            continue
        if v.get("datasource", {}).get("uid") != DATASOURCE_UID:
            out.append(f"variable {v.get('name')}: datasource is not {DATASOURCE_UID}")
        if not LABEL_VALUES.match(v.get("query", "")):
            out.append(f"variable {v.get('name')}: query is not label_values(SELECTOR, LABEL)")
    ids = [p.get("id") for p in all_panels(dash)]
    if any(not isinstance(i, int) for i in ids) or len(set(ids)) != len(ids):
        out.append(f"panel ids not unique integers: {ids}")
    for p in all_panels(dash):
        where = f"panel {p.get('id')} '{p.get('title')}'"
        g = p.get("gridPos", {})
        if not all(isinstance(g.get(k), int) for k in "hwxy") or g["x"] + g["w"] > 24:
            out.append(f"{where}: gridPos {g} missing or wider than 24 columns")
        if p.get("type") == "row":
            continue
        if p.get("datasource", {}).get("uid") != DATASOURCE_UID:
            out.append(f"{where}: datasource is not {DATASOURCE_UID}")
        targets = p.get("targets") or []
        if not targets:
            out.append(f"{where}: no targets")
        refs = [t.get("refId") for t in targets]
        if len(set(refs)) != len(refs):
            out.append(f"{where}: refIds not unique: {refs}")
        for t in targets:
            if not isinstance(t.get("expr"), str) or not t["expr"].strip():
                out.append(f"{where}: target {t.get('refId')} has no expr")
            if t.get("datasource", {}).get("uid") != DATASOURCE_UID:
                out.append(f"{where}: target {t.get('refId')} datasource is not {DATASOURCE_UID}")
        repeat = p.get("repeat")
        if repeat and not any(v.get("name") == repeat and v.get("multi") for v in variables):
            out.append(f"{where}: repeats over '{repeat}', not a multi-value variable")
    # A variable's current value ($__all) is a value, not a use: its queries and data source are.
    uses = [{k: v.get(k) for k in ("query", "definition", "datasource")} for v in variables]
    for text in strings({"panels": dash["panels"], "templating": uses}):
        for name in used_variables(text) - defined - BUILTIN:
            out.append(f"variable ${name} used (in {text[:80]!r}) but not defined")
    return out


def substitute(text, values):
    """The text as Grafana sends it: a label variable becomes values[name] (a regex), Grafana's
    interval variables a fixed range. A variable left over is an error."""
    def one(m):
        name = next(g for g in m.groups() if g)
        if name in BUILTIN:
            return FIXED_RANGE
        if name not in values:
            raise KeyError(f"no value for ${name} in {text!r}")
        return values[name]
    return USE.sub(one, text)


def queries(dash):
    """(where, expr, instant, legendFormat) for every target of every panel."""
    for p in all_panels(dash):
        for t in p.get("targets") or []:
            yield (f"panel {p['id']} '{p['title']}' {t['refId']}", t["expr"],
                   bool(t.get("instant")) and not t.get("range"), t.get("legendFormat", ""))


def variable_queries(dash):
    """(name, selector, label) of each label_values() variable."""
    for v in dash["templating"]["list"]:
        m = LABEL_VALUES.match(v.get("query", "")) if v.get("type") == "query" else None
        if m:
            yield v["name"], m.group(1).strip(), m.group(2)


def label_variables(dash):
    return [v["name"] for v in dash["templating"]["list"] if v.get("type") == "query"]


def main():
    sys.path.insert(0, os.path.join(HERE, ".."))
    sys.dont_write_bytecode = True
    from script_harness import check, log, results
    path = sys.argv[1] if len(sys.argv) > 1 else DASHBOARD
    try:
        dash = load(path)
    except (OSError, ValueError) as e:
        print(f"{path}: {e}", file=sys.stderr)
        sys.exit(2)
    found = problems(dash)
    for p in found:
        log(f"      {p}")
    check(f"{os.path.basename(path)}: structure as Grafana imports it", not found,
          f"{len(found)} problems")
    if not found:
        panels = [p for p in all_panels(dash) if p.get("type") != "row"]
        n = sum(1 for _ in queries(dash))
        check(f"{len(panels)} panels, {n} queries, every query substitutes to PromQL",
              all(substitute(e, {v: ".*" for v in label_variables(dash)}) for _, e, _, _ in
                  queries(dash)))
    passed = sum(1 for _, ok, _ in results if ok)
    log(f"{passed} passed, {len(results) - passed} failed")
    sys.exit(0 if passed == len(results) else 1)


if __name__ == "__main__":
    main()
