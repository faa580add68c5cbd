// SPDX-License-Identifier: MIT
#include "loaderlens/proc_text.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <fcntl.h>
#include <unistd.h>

namespace loaderlens {

std::optional<std::string> read_text_file(const std::string& path, int* error) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (error) *error = errno;
        return std::nullopt;
    }
    // Multi-record seq_files (smaps, mountinfo) return one part per read: read until 0.
    std::string text;
    std::size_t used = 0;
    for (;;) {
        // Start small (a stat or status text is < 2 KiB) and double: smaps can be megabytes.
        if (used == text.size()) text.resize(std::max<std::size_t>(4096, text.size() * 2));
        ssize_t n = ::read(fd, text.data() + used, text.size() - used);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (error) *error = errno;
            ::close(fd);
            return std::nullopt;
        }
        if (n == 0) break;
        used += static_cast<std::size_t>(n);
    }
    ::close(fd);
    text.resize(used);
    return text;
}

long pread_whole(int fd, std::string& buffer) {
    if (buffer.capacity() < 4096) buffer.reserve(4096);
    buffer.resize(buffer.capacity());
    std::size_t used = 0;
    for (;;) {
        ssize_t n =
            ::pread(fd, buffer.data() + used, buffer.size() - used, static_cast<off_t>(used));
        if (n < 0) {
            if (errno == EINTR) continue;
            return -errno;
        }
        used += static_cast<std::size_t>(n);
        // Single-record files (statm, status, stat, smaps_rollup) are generated whole by one
        // show(): a read that does not fill the buffer has everything, and asking again would
        // make the kernel generate the text a second time.
        if (n == 0 || used < buffer.size()) break;
        buffer.resize(buffer.size() * 2);
    }
    buffer.resize(used);
    return static_cast<long>(used);
}

namespace {

template <typename T> bool to_number(std::string_view text, T& out) {
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc{} && ptr != text.data();
}

std::string_view next_token(std::string_view& rest) {
    std::size_t start = rest.find_first_not_of(" \t");
    if (start == std::string_view::npos) {
        rest = {};
        return {};
    }
    std::size_t end = rest.find_first_of(" \t", start);
    std::string_view token = rest.substr(start, end - start);
    rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end);
    return token;
}

} // namespace

std::optional<StatFields> parse_stat(std::string_view text) {
    // comm is in parentheses and may itself contain spaces and ')': the last ')' ends it.
    std::size_t open = text.find('(');
    std::size_t close = text.rfind(')');
    if (open == std::string_view::npos || close == std::string_view::npos || close < open)
        return std::nullopt;
    StatFields fields;
    fields.comm = std::string(text.substr(open + 1, close - open - 1));
    std::string_view rest = text.substr(close + 1);
    // Field 3 is the state; fields are counted from 1 with pid=1, comm=2.
    int field = 3;
    for (std::string_view token = next_token(rest); !token.empty(); token = next_token(rest)) {
        if (field == 3)
            fields.state = token[0];
        else if (field == 4 && !to_number(token, fields.ppid))
            return std::nullopt;
        else if (field == 10)
            to_number(token, fields.minor_faults);
        else if (field == 12)
            to_number(token, fields.major_faults);
        else if (field == 22 && !to_number(token, fields.start_ticks))
            return std::nullopt;
        else if (field == 28)
            to_number(token, fields.start_stack);
        else if (field == 47)
            to_number(token, fields.start_brk);
        else if (field == 48)
            to_number(token, fields.arg_start);
        else if (field == 50)
            to_number(token, fields.env_start);
        else if (field == 52)
            to_number(token, fields.exit_code);
        ++field;
    }
    if (field <= 22) return std::nullopt;
    return fields;
}

std::optional<StatmFields> parse_statm(std::string_view text) {
    StatmFields fields;
    std::string_view rest = text;
    if (!to_number(next_token(rest), fields.size_pages)) return std::nullopt;
    if (!to_number(next_token(rest), fields.resident_pages)) return std::nullopt;
    if (!to_number(next_token(rest), fields.shared_pages)) return std::nullopt;
    return fields;
}

int parse_kb_fields(std::string_view text, std::span<const KbField> fields) {
    int found = 0;
    while (!text.empty()) {
        std::size_t eol = text.find('\n');
        std::string_view line = text.substr(0, eol);
        text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
        std::size_t colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        std::string_view key = line.substr(0, colon);
        for (const KbField& field : fields) {
            if (field.name != key) continue;
            std::string_view rest = line.substr(colon + 1);
            std::int64_t value = 0;
            if (to_number(next_token(rest), value)) {
                *field.value = value;
                ++found;
            }
            break;
        }
    }
    return found;
}

void parse_smaps_rollup(std::string_view text, RollupSample& s) {
    const std::array<KbField, 12> fields{{
        {"Rss", &s.rss},
        {"Pss", &s.pss},
        {"Pss_Anon", &s.pss_anon},
        {"Pss_File", &s.pss_file},
        {"Pss_Shmem", &s.pss_shmem},
        {"Shared_Clean", &s.shared_clean},
        {"Shared_Dirty", &s.shared_dirty},
        {"Private_Clean", &s.private_clean},
        {"Private_Dirty", &s.private_dirty},
        {"Swap", &s.swap},
        {"SwapPss", &s.swap_pss},
        {"Locked", &s.locked},
    }};
    parse_kb_fields(text, fields);
}

void parse_status_memory(std::string_view text, FastSample& s) {
    const std::array<KbField, 5> fields{{
        {"VmRSS", &s.rss},
        {"RssAnon", &s.rss_anon},
        {"RssFile", &s.rss_file},
        {"RssShmem", &s.rss_shmem},
        {"VmSwap", &s.swap},
    }};
    parse_kb_fields(text, fields);
}

std::string maps_path(std::string_view as_shown) {
    std::string path;
    path.reserve(as_shown.size());
    for (std::size_t i = 0; i < as_shown.size(); ++i) {
        if (as_shown.substr(i, 4) == "\\012") {
            path += '\n';
            i += 3;
        } else {
            path += as_shown[i];
        }
    }
    return path;
}

MappingKind classify_mapping(std::string_view path) {
    if (path.empty()) return MappingKind::anon;
    if (path == "[heap]") return MappingKind::heap;
    if (path.starts_with("[stack")) return MappingKind::stack;
    if (path.starts_with("[anon:")) return MappingKind::anon; // named anonymous (prctl)
    if (path.starts_with("[anon_shmem:")) return MappingKind::shmem;
    if (path.starts_with("[")) return MappingKind::other; // [vdso], [vvar], [vsyscall]
    // Shared memory: POSIX shm, SysV segments, memfd, and shared anonymous (/dev/zero).
    if (path.starts_with("/dev/shm/") || path.starts_with("/SYSV") || path.starts_with("/memfd:") ||
        path.starts_with("/dev/zero"))
        return MappingKind::shmem;
    if (path.ends_with(" (deleted)")) return MappingKind::deleted_file;
    return MappingKind::file;
}

} // namespace loaderlens
