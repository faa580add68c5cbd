# SPDX-License-Identifier: MIT
"""Keyword rules -> the TOML budget file `loaderlens check --budget` reads (docs/check.md).

The keywords mirror the file's keys, so that a rule reads the same in a marker and in a file:
`forbid=["copy_on_read"]`, `warmup_epochs=1`, `slurm_linux="2GiB"`, `worker_pss="200MiB"`
(`<selection>_<figure>`), `growth_rss="8MiB"`, `files={"*.npy": {"rss": "64MiB"}}`.
Names and types are checked here; values only check itself knows (sizes, durations, finding
kinds) are checked by check, whose message is mapped back to the keyword (see `Budget.keyword_at`).
"""

CHECK_KEYS = ("warmup", "warmup_epochs", "mem_limit", "skip_unavailable")
SCHEDULER_KEYS = ("slurm_linux", "slurm_usepss", "slurm_noshared", "slurm_cgroup",
                  "cgroup_usage", "k8s_working_set", "min_margin")
PROCESS_FIGURES = ("rss", "rss_anon", "rss_file", "rss_shmem", "swap", "pss", "uss",
                   "pss_anon", "pss_file", "pss_shmem", "private_dirty", "swap_pss")
GROWTH_FIGURES = ("rss", "pss", "uss", "private_dirty", "rss_file")
FILE_FIGURES = ("rss", "pss", "process_rss", "cached")
SEVERITIES = ("info", "warning", "critical")
ROLES = ("main", "worker")
SELECTIONS = "main, worker, helper, workers, worker<N>"

VALID = ("forbid, max_severity, " + ", ".join(CHECK_KEYS) + ", " + ", ".join(SCHEDULER_KEYS)
         + f", <selection>_<figure> (selection: {SELECTIONS}; figure: "
         + ", ".join(PROCESS_FIGURES) + "), growth_<figure> (" + ", ".join(GROWTH_FIGURES)
         + "), growth_role, files")


def toml_string(text: str, keyword: str) -> str:
    """A TOML basic string: quotes, backslashes and every control character escaped."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if 0xD800 <= code <= 0xDFFF:
            raise ValueError(f"loaderlens rule {keyword}: {text!r} holds a lone surrogate, "
                             "which a TOML file cannot")
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch in "\b\t\n\f\r":
            out.append({"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}[ch])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\u{code:04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _unknown(keyword):
    return TypeError(f"loaderlens: unknown rule {keyword!r} (valid: {VALID})")


def _size(value, keyword):
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"loaderlens rule {keyword}={value!r}: a size is a string such as "
                         f"\"512MiB\" or an int of bytes, got {type(value).__name__}")
    if isinstance(value, int) and value < 0:
        raise ValueError(f"loaderlens rule {keyword}={value!r}: a size cannot be negative")
    return str(value) if isinstance(value, int) else toml_string(value, keyword)


def _duration(value, keyword):
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"loaderlens rule {keyword}={value!r}: a duration is a string such "
                         f"as \"30s\" or a number of seconds, got {type(value).__name__}")
    if isinstance(value, str):
        return toml_string(value, keyword)
    if not value >= 0 or value > 10**9:  # also NaN
        raise ValueError(f"loaderlens rule {keyword}={value!r}: seconds from 0 to 1e9")
    return toml_string(f"{round(value * 1000)}ms", keyword)


def _boolean(value, keyword):
    if not isinstance(value, bool):
        raise ValueError(f"loaderlens rule {keyword}={value!r}: expected True or False")
    return "true" if value else "false"


def _integer(value, keyword):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"loaderlens rule {keyword}={value!r}: expected an int >= 0")
    return str(value)


def _choice(value, keyword, choices):
    if value not in choices:
        raise ValueError(f"loaderlens rule {keyword}={value!r}: one of {', '.join(choices)}")
    return toml_string(value, keyword)


def _selection(name):
    """`worker3` -> the [[process]] keys selecting it, or None when the name is no selection."""
    if name in ("main", "worker", "helper"):
        return [("role", toml_string(name, name))]
    if name == "workers":
        return [("role", '"worker"'), ("sum", "true")]
    if name.startswith("worker") and name[6:].isdigit() and name[6:] == str(int(name[6:])):
        return [("role", '"worker"'), ("slot", str(int(name[6:])))]
    return None


class Budget:
    """The TOML text of some keyword rules, and which keyword wrote each of its lines."""

    def __init__(self, rules: dict):
        self._lines = ["# written by loaderlens (Python) from keyword rules"]
        self._keywords = [None]
        tables = {"check": [], "schedulers": [], "growth": [], "findings": []}
        processes = {}
        for keyword, value in rules.items():
            if keyword in CHECK_KEYS:
                write = {"warmup": _duration, "warmup_epochs": _integer, "mem_limit": _size,
                         "skip_unavailable": _boolean}[keyword]
                tables["check"].append((keyword, write(value, keyword), keyword))
            elif keyword in SCHEDULER_KEYS:
                tables["schedulers"].append((keyword, _size(value, keyword), keyword))
            elif keyword == "forbid":
                tables["findings"].append(("forbid", self._kinds(value), keyword))
            elif keyword == "max_severity":
                tables["findings"].append(
                    ("max_severity", _choice(value, keyword, SEVERITIES), keyword))
            elif keyword == "growth_role":
                tables["growth"].append(("role", _choice(value, keyword, ROLES), keyword))
            elif keyword.startswith("growth_"):
                figure = keyword[len("growth_"):]
                if figure not in GROWTH_FIGURES:
                    raise _unknown(keyword)
                tables["growth"].append((figure, _size(value, keyword), keyword))
            elif keyword == "files":
                pass  # written last: [[file]] tables
            else:
                name, _, figure = keyword.partition("_")
                selection = _selection(name)
                if selection is None or figure not in PROCESS_FIGURES:
                    raise _unknown(keyword)
                processes.setdefault(name, selection[:]).append(
                    (figure, _size(value, keyword), keyword))
        if tables["growth"] and all(key == "role" for key, _, _ in tables["growth"]):
            raise ValueError("loaderlens rule growth_role: needs a growth_<figure> rule too ("
                             + ", ".join("growth_" + f for f in GROWTH_FIGURES) + ")")
        for table, entries in tables.items():
            if entries:
                self._add(f"[{table}]", None)
                for key, text, keyword in entries:
                    self._add(f"{key} = {text}", keyword)
        for entries in processes.values():
            first_rule = next(entry[2] for entry in entries if len(entry) == 3)
            self._add("[[process]]", first_rule)
            for entry in entries:
                self._add(f"{entry[0]} = {entry[1]}", entry[2] if len(entry) == 3 else first_rule)
        if "files" in rules:
            self._files(rules["files"])

    def _add(self, line, keyword):
        self._lines.append(line)
        self._keywords.append(keyword)

    @staticmethod
    def _kinds(value):
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, (list, tuple)) or not all(isinstance(k, str) for k in value):
            raise ValueError(f"loaderlens rule forbid={value!r}: a list of finding kinds, "
                             "e.g. forbid=[\"copy_on_read\"]")
        return "[" + ", ".join(toml_string(k, "forbid") for k in value) + "]"

    def _files(self, files):
        shape = 'files={"*.npy": {"rss": "64MiB"}}'
        if not isinstance(files, dict) or not files:
            raise ValueError(f"loaderlens rule files={files!r}: expected {shape}")
        for pattern, figures in files.items():
            keyword = f"files[{pattern!r}]"
            if not isinstance(pattern, str) or not isinstance(figures, dict) or not figures:
                raise ValueError(f"loaderlens rule {keyword}: expected {shape}")
            self._add("[[file]]", keyword)
            self._add(f"path = {toml_string(pattern, keyword)}", keyword)
            for figure, size in figures.items():
                if figure not in FILE_FIGURES:
                    raise TypeError(f"loaderlens: unknown rule {keyword}[{figure!r}] "
                                    f"(valid: {', '.join(FILE_FIGURES)})")
                self._add(f"{figure} = {_size(size, keyword + f'[{figure!r}]')}",
                          keyword + f"[{figure!r}]")

    @property
    def text(self) -> str:
        return "\n".join(self._lines) + "\n"

    @property
    def empty(self) -> bool:
        return len(self._lines) == 1

    def keyword_at(self, line: int):
        """The keyword that wrote line `line` (1-based) of `text`, or None."""
        return self._keywords[line - 1] if 1 <= line <= len(self._keywords) else None


def budget_toml(**rules) -> str:
    """The TOML budget text of keyword rules (see the module's doc)."""
    return Budget(rules).text
