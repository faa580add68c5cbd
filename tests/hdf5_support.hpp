// SPDX-License-Identifier: MIT
// HDF5 tests: h5py (Debian python3-h5py, the distribution's python only) as the oracle of the
// file's content, `loaderlens load --json` for what the reference loader read, and the kernel's
// smaps_rollup for what it cost.
#pragma once

#include "precondition.hpp"
#include "replay_support.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace loaderlens::test {

inline const std::string system_python = "/usr/bin/python3";

// h5py is the oracle of the HDF5 cases: CI must have it (setup.sh installs python3-h5py).
inline bool have_h5py() {
    static const bool available = run({system_python, "-c", "import h5py, numpy"}).exit_code == 0;
    return precondition(available, system_python + " cannot import h5py (Debian: python3-h5py)",
                        InCi::must_have);
}

inline RunResult python(const std::string& script, std::vector<std::string> args = {}) {
    std::vector<std::string> argv{system_python, "-c", script};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv);
}

// `loaderlens load --json ARGS...`; requires success.
inline nlohmann::json load_json(const std::vector<std::string>& args) {
    std::vector<std::string> argv{cli_path(), "load", "--json"};
    argv.insert(argv.end(), args.begin(), args.end());
    const RunResult result = run(argv);
    BOOST_REQUIRE_MESSAGE(result.exit_code == 0, "load failed: " + result.err);
    return nlohmann::json::parse(result.out);
}

// The checksum the loader computes over what main consumed (one 8-byte word per 4 KiB page of
// each batch, summed modulo 2^64), computed by numpy from h5py's reading of the file, for the
// sequential pattern with batch 1: each batch is one record.
inline const char* h5py_checksum_script = R"(import sys, h5py, numpy as np
d = h5py.File(sys.argv[1], 'r')[sys.argv[2]]
total = 0
for i in range(d.shape[0]):
    b = np.ascontiguousarray(d[i]).tobytes()
    for o in range(0, len(b) - 7, 4096):
        total += int.from_bytes(b[o:o + 8], 'little')
print(total % 2**64, d.shape[0] * len(b)))";

// Anonymous memory of a process in KiB (smaps_rollup "Anonymous:"), -1 if unreadable.
inline std::int64_t anonymous_kb(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/smaps_rollup");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("Anonymous:", 0) == 0) return std::stoll(line.substr(10));
    return -1;
}

} // namespace loaderlens::test
