// SPDX-License-Identifier: MIT
#include "loaderlens/worker_match.hpp"

#include <regex.h>
#include <stdexcept>
#include <vector>

namespace loaderlens {

namespace {

// How many positions glibc's matcher walks for a pattern: every atom counts once, a group counts
// what it holds, and a repetition multiplies what it repeats (glibc unrolls "x{m,n}" into n
// copies of x, "x{m,}" into m + 1 and "x+" into 2). Saturates at `limit` + 1. Also refuses what
// makes glibc backtrack (back-references) and ECMAScript syntax that POSIX would silently read
// otherwise. The syntax itself is left to regcomp.
class PatternSize {
  public:
    explicit PatternSize(std::size_t limit) : limit_(limit), groups_(1) {}

    // The problem, or nothing; positions() is then the estimate.
    std::optional<std::string> scan(std::string_view pattern) {
        for (std::size_t i = 0; i < pattern.size(); ++i) {
            const char c = pattern[i];
            if (c == '\\' && i + 1 < pattern.size()) {
                const char next = pattern[++i];
                if (next >= '1' && next <= '9')
                    return "back-references (\\" + std::string(1, next) +
                           ") are not supported: they make matching exponential";
                if (next == 'd' || next == 'D')
                    return std::string("\\") + next +
                           " is ECMAScript: POSIX extended expressions " +
                           "write [0-9] (or [^0-9])";
                add_atom(1);
            } else if (c == '[') {
                i = bracket_end(pattern, i);
                add_atom(1);
            } else if (c == '(') {
                if (i + 1 < pattern.size() && pattern[i + 1] == '?')
                    return "(?...) is ECMAScript or Perl syntax: POSIX extended expressions "
                           "have plain groups (...)";
                groups_.push_back({});
            } else if (c == ')' && groups_.size() > 1) {
                const std::size_t inside = std::max<std::size_t>(groups_.back().total, 1);
                groups_.pop_back();
                add_atom(inside);
            } else if (c == '|') {
                groups_.back().last = 0;
            } else if (c == '+') {
                repeat(2);
            } else if (c == '{') {
                const auto interval = parse_interval(pattern, i);
                if (!interval) {
                    add_atom(1); // not an interval: regcomp decides what it is
                    continue;
                }
                const auto [count, end] = *interval;
                if (count > max_repeat)
                    return "a repetition count above " + std::to_string(max_repeat) +
                           " (each copy makes every match slower)";
                repeat(count);
                i = end;
            } else if (c != '*' && c != '?') {
                add_atom(1);
            }
            if (positions() > limit_)
                return "expands to more than " + std::to_string(limit_) +
                       " positions once its {m,n} repetitions are unrolled (each makes every "
                       "match slower)";
        }
        return std::nullopt;
    }

    std::size_t positions() const {
        std::size_t total = 0;
        for (const Group& group : groups_)
            total = saturated(total + group.total);
        return total;
    }

  private:
    static constexpr std::size_t max_repeat = 255; // POSIX's RE_DUP_MAX minimum
    struct Group {
        std::size_t total = 0, last = 0; // everything so far; the last atom (what a repeat repeats)
    };

    std::size_t saturated(std::size_t value) const { return std::min(value, limit_ + 1); }

    void add_atom(std::size_t size) {
        Group& group = groups_.back();
        group.total = saturated(group.total + size);
        group.last = size;
    }

    void repeat(std::size_t count) {
        Group& group = groups_.back();
        const std::size_t copies = std::max<std::size_t>(count, 1) - 1;
        group.total = saturated(group.total + saturated(group.last * copies));
        group.last = saturated(group.last * std::max<std::size_t>(count, 1));
    }

    // The index of the ']' that closes the bracket expression opened at `open` (a ']' right
    // after "[" or "[^" is a member; "[:alpha:]", "[=a=]" and "[.a.]" hold their own ']').
    static std::size_t bracket_end(std::string_view pattern, std::size_t open) {
        std::size_t i = open + 1;
        if (i < pattern.size() && pattern[i] == '^') ++i;
        if (i < pattern.size() && pattern[i] == ']') ++i;
        for (; i < pattern.size(); ++i) {
            if (pattern[i] == ']') return i;
            if (pattern[i] == '[' && i + 1 < pattern.size() &&
                (pattern[i + 1] == ':' || pattern[i + 1] == '=' || pattern[i + 1] == '.')) {
                const char kind = pattern[i + 1];
                const std::size_t close = pattern.find(std::string{kind, ']'}, i + 2);
                if (close == std::string_view::npos) return pattern.size();
                i = close + 1;
            }
        }
        return pattern.size();
    }

    // "{m}", "{m,}" or "{m,n}" at `open`: the copies glibc makes, and the index of the '}'.
    static std::optional<std::pair<std::size_t, std::size_t>>
    parse_interval(std::string_view pattern, std::size_t open) {
        std::size_t i = open + 1, low = 0, high = 0;
        bool comma = false, has_low = false, has_high = false;
        auto digits = [&](std::size_t& value, bool& seen) {
            for (; i < pattern.size() && pattern[i] >= '0' && pattern[i] <= '9'; ++i) {
                value = std::min<std::size_t>(
                    value * 10 + static_cast<std::size_t>(pattern[i] - '0'), 100000);
                seen = true;
            }
        };
        digits(low, has_low);
        if (i < pattern.size() && pattern[i] == ',') {
            comma = true;
            ++i;
            digits(high, has_high);
        }
        if (i >= pattern.size() || pattern[i] != '}' || (!has_low && !has_high))
            return std::nullopt;
        const std::size_t count = has_high ? std::max(low, high) : comma ? low + 1 : low;
        return std::pair{count, i};
    }

    std::size_t limit_;
    std::vector<Group> groups_;
};

} // namespace

struct WorkerMatch::Compiled {
    regex_t regex{};
    ~Compiled() { regfree(&regex); }
};

std::optional<std::string> WorkerMatch::problem(const std::string& pattern) {
    if (pattern.size() > max_pattern_bytes)
        return "longer than " + std::to_string(max_pattern_bytes) + " bytes (" +
               std::to_string(pattern.size()) + ")";
    if (pattern.find('\0') != std::string::npos) return "contains a NUL byte";
    if (auto problem = PatternSize(max_expanded_positions).scan(pattern)) return problem;
    regex_t regex{};
    const int error = regcomp(&regex, pattern.c_str(), REG_EXTENDED | REG_NOSUB);
    if (error == 0) {
        regfree(&regex);
        return std::nullopt;
    }
    char text[160] = {};
    regerror(error, &regex, text, sizeof text);
    return std::string("not a valid POSIX extended regular expression (") + text + ")";
}

WorkerMatch::WorkerMatch(const std::string& pattern) : compiled_(std::make_unique<Compiled>()) {
    if (auto refused = problem(pattern)) throw std::invalid_argument(*refused);
    if (regcomp(&compiled_->regex, pattern.c_str(), REG_EXTENDED | REG_NOSUB) != 0)
        throw std::invalid_argument("not a valid POSIX extended regular expression");
}

WorkerMatch::~WorkerMatch() = default;

bool WorkerMatch::matches(std::string_view text) const {
    // A copy: regexec wants a terminated string, and a command line may be megabytes long.
    const std::string subject(text.substr(0, subject_bytes));
    return regexec(&compiled_->regex, subject.c_str(), 0, nullptr, 0) == 0;
}

} // namespace loaderlens
