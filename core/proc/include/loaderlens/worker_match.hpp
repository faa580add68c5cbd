// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace loaderlens {

// --worker-match: a POSIX extended regular expression (glibc's regcomp/regexec) searched for in a
// process's comm and in the first `subject_bytes` of its command line. glibc matches without
// recursing on the subject (a 1 MiB command line matches on a 64 KiB stack), unlike std::regex,
// whose executor recursed once per character and overflowed the recorder's stack on a 30 KB
// command line. Its unanchored search can still cost time quadratic in the subject and linear in
// the expanded pattern, and back-references make it exponential: hence the bounded prefix and
// the limits on the pattern (docs/workers.md gives the measurements).
class WorkerMatch {
  public:
    static constexpr std::size_t max_pattern_bytes = 256;
    // Positions of the pattern once {m,n} repetitions are expanded (what glibc's matcher walks).
    static constexpr std::size_t max_expanded_positions = 256;
    // One page: what /proc/PID/cmdline gave before Linux 4.2, and ps still shows by default.
    static constexpr std::size_t subject_bytes = 4096;

    // Why `pattern` is refused, in one line that does not repeat the pattern (the caller names
    // the option), or nothing when it can be used. The CLI calls this when it parses options.
    static std::optional<std::string> problem(const std::string& pattern);

    // Throws std::invalid_argument with problem()'s text for a refused pattern.
    explicit WorkerMatch(const std::string& pattern);
    ~WorkerMatch();
    WorkerMatch(const WorkerMatch&) = delete;
    WorkerMatch& operator=(const WorkerMatch&) = delete;

    // Whether the pattern occurs in `text` (only its first subject_bytes are looked at).
    bool matches(std::string_view text) const;

  private:
    struct Compiled;
    std::unique_ptr<Compiled> compiled_;
};

} // namespace loaderlens
