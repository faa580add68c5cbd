// SPDX-License-Identifier: MIT
#include "smaps_oracle.hpp"

#include <fstream>
#include <sstream>
#include <string>

namespace loaderlens::test {

std::optional<SmapsOfFile> smaps_of_file(pid_t pid, std::uint64_t inode) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/smaps");
    std::ostringstream whole;
    whole << in.rdbuf();
    const std::string text = whole.str();
    if (!in || text.empty()) return std::nullopt; // gone, or a zombie: no mappings to read
    std::istringstream lines(text);
    SmapsOfFile out;
    bool ours = false;
    std::string line;
    while (std::getline(lines, line)) {
        std::istringstream fields(line);
        std::string first;
        fields >> first;
        if (first.find('-') != std::string::npos && first.back() != ':') { // a mapping's header
            std::string perms, offset, device;
            std::uint64_t ino = 0;
            fields >> perms >> offset >> device >> ino;
            ours = ino == inode;
            out.mappings += ours;
            continue;
        }
        std::int64_t kb = 0;
        fields >> kb;
        if (ours && first == "Rss:") out.rss_kb += kb;
        if (ours && first == "Pss:") out.pss_kb += kb;
    }
    return out;
}

std::optional<std::int64_t> rollup_pss_kb(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/smaps_rollup");
    std::string name;
    std::int64_t kb = 0;
    while (in >> name) {
        if (name == "Pss:" && in >> kb) return kb;
        in.ignore(1 << 12, '\n');
    }
    return std::nullopt;
}

} // namespace loaderlens::test
