// SPDX-License-Identifier: MIT
#include "made_recordings.hpp"

#include "consumers_agree.hpp"
#include "support.hpp"

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <mutex>
#include <thread>

namespace loaderlens::test {

namespace {

const std::thread::id test_thread = std::this_thread::get_id();
std::mutex pending_mutex;
std::vector<std::string> pending; // made on another thread, not checked yet

bool writes_recording(const std::string& command) {
    return command == "record" || command == "replay" || command == "merge";
}

void check(const std::string& recording) {
    std::error_code ignored;
    // Refused, or removed; never read through a link.
    if (std::filesystem::symlink_status(recording, ignored).type() !=
        std::filesystem::file_type::regular)
        return;
    check_consumers_agree(recording);
}

} // namespace

std::optional<std::string> recording_written_by(const std::vector<std::string>& argv) {
    // The CLI itself, or behind `env VAR=...` (SLURM's variables, say).
    const auto cli = std::find(argv.begin(), argv.end(), cli_path());
    if (cli == argv.end() || cli + 1 == argv.end() || !writes_recording(cli[1]))
        return std::nullopt;
    for (auto i = static_cast<std::size_t>(cli - argv.begin()) + 2;
         i < argv.size() && argv[i] != "--"; ++i) {
        const std::string& a = argv[i];
        if ((a == "-o" || a == "--output") && i + 1 < argv.size()) return argv[i + 1];
        if (a.starts_with("--output=")) return a.substr(9);
        if (a.starts_with("-o") && a.size() > 2 && !a.starts_with("--")) return a.substr(2);
    }
    return std::nullopt;
}

void recording_made(const std::string& recording) {
    if (std::this_thread::get_id() == test_thread) return check(recording);
    const std::lock_guard lock(pending_mutex);
    pending.push_back(recording);
}

void check_recordings_made_under(const std::string& dir) noexcept {
    if (std::this_thread::get_id() != test_thread) return;
    std::vector<std::string> mine;
    {
        const std::lock_guard lock(pending_mutex);
        std::erase_if(pending, [&](const std::string& r) {
            if (!r.starts_with(dir + "/")) return false;
            mine.push_back(r);
            return true;
        });
    }
    for (const std::string& recording : mine)
        try {
            check(recording);
        } catch (...) { // a failed requirement: already reported as the test's failure
        }
}

} // namespace loaderlens::test
