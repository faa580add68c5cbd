// SPDX-License-Identifier: MIT
// Trace files (--pattern trace): one index per line, read line by line from a bounded regular file.
#include "trace_parser.hpp"

#include "loaderlens/probes/patterns.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

namespace loaderlens::probes {

std::string index_out_of_range(std::string_view index, std::int64_t dataset_size) {
    return fmt::format("index {} is out of range: the dataset has {} samples", index, dataset_size);
}

namespace {

std::string_view trim(std::string_view text) {
    constexpr std::string_view blanks = " \t\r\f\v";
    const auto first = text.find_first_not_of(blanks);
    if (first == std::string_view::npos) return {};
    return text.substr(first, text.find_last_not_of(blanks) - first + 1);
}

// Parses a trace one line at a time, so that memory holds the indices, never the text.
class TraceParser {
  public:
    TraceParser(const std::string& path, std::int64_t dataset_size)
        : path_(path), dataset_size_(dataset_size) {}

    void add(std::string_view text) {
        while (!text.empty()) {
            const auto newline = text.find('\n');
            line_.append(text.substr(0, newline));
            if (line_.size() > max_line)
                throw PatternError(fmt::format("{}:{}: '{}...' is not a sample index", path_,
                                               line_number_, printable(line_.substr(0, 40))));
            if (newline == std::string_view::npos) return;
            end_line();
            text.remove_prefix(newline + 1);
        }
    }

    std::vector<std::int64_t> finish() {
        if (!line_.empty()) end_line();
        return std::move(indices_);
    }

  private:
    // Longer than any index with blanks around it: a binary file, not a trace.
    static constexpr std::size_t max_line = 4096;

    static std::string printable(std::string_view text) {
        std::string out(text);
        std::replace_if(
            out.begin(), out.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; },
            '?');
        return out;
    }

    void end_line() {
        const std::string_view line = trim(line_);
        const std::int64_t number = line_number_++;
        if (!line.empty() && line.front() != '#') parse(line, number);
        line_.clear();
    }

    void parse(std::string_view line, std::int64_t line_number) {
        std::int64_t index = 0;
        const auto [end, error] = std::from_chars(line.data(), line.data() + line.size(), index);
        const bool whole_line = end == line.data() + line.size();
        if (error == std::errc::result_out_of_range && whole_line)
            throw PatternError(fmt::format("{}:{}: {}", path_, line_number,
                                           index_out_of_range(line, dataset_size_)));
        if (error != std::errc{} || !whole_line)
            // A bounded excerpt, so that a binary file still gives a one-line message.
            throw PatternError(fmt::format("{}:{}: '{}{}' is not a sample index", path_,
                                           line_number, printable(line.substr(0, 40)),
                                           line.size() > 40 ? "..." : ""));
        if (index < 0 || index >= dataset_size_)
            throw PatternError(
                fmt::format("{}:{}: {}", path_, line_number,
                            index_out_of_range(std::to_string(index), dataset_size_)));
        if (static_cast<std::int64_t>(indices_.size()) >= max_samples_per_epoch)
            throw PatternError(fmt::format("{}: more than {} indices (the most an epoch holds)",
                                           path_, max_samples_per_epoch));
        indices_.push_back(index);
    }

    const std::string& path_;
    std::int64_t dataset_size_;
    std::string line_;
    std::int64_t line_number_ = 1;
    std::vector<std::int64_t> indices_;
};

struct TraceFile {
    int fd = -1;
    ~TraceFile() {
        if (fd >= 0) ::close(fd);
    }
};

} // namespace

std::vector<std::int64_t> read_trace(const std::string& path, std::int64_t dataset_size) {
    // POSIX reads so that the error names the real cause (ENOENT, EACCES, EISDIR, ...).
    const auto cannot_read = [&path] {
        return PatternError(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
    };
    // O_NONBLOCK: opening a FIFO for reading would wait for a writer, forever.
    TraceFile file{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
    if (file.fd < 0) throw cannot_read();
    struct stat st {};
    if (::fstat(file.fd, &st) != 0) throw cannot_read();
    if (S_ISDIR(st.st_mode))
        throw PatternError(fmt::format("{}: cannot read: {}", path, std::strerror(EISDIR)));
    if (!S_ISREG(st.st_mode))
        throw PatternError(fmt::format("{}: not a regular file (a pipe, device or socket has no "
                                       "end to read to): write the trace to a file",
                                       path));
    const auto too_large = [&path] {
        return PatternError(fmt::format("{}: larger than {} bytes, the most a trace may have", path,
                                        max_trace_bytes));
    };
    if (st.st_size > max_trace_bytes) throw too_large();
    TraceParser parser(path, dataset_size);
    std::array<char, 65536> buffer;
    std::int64_t total = 0;
    for (;;) {
        const ssize_t got = ::read(file.fd, buffer.data(), buffer.size());
        if (got == 0) break;
        if (got < 0) {
            if (errno == EINTR) continue;
            throw cannot_read();
        }
        total += got;
        if (total > max_trace_bytes) throw too_large(); // a file that grows as it is read
        parser.add(std::string_view(buffer.data(), static_cast<std::size_t>(got)));
    }
    return parser.finish();
}

} // namespace loaderlens::probes
