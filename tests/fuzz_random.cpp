// SPDX-License-Identifier: MIT
#include "fuzz_random.hpp"

#include <cstdio>
#include <cstdlib>
#include <random>
#include <stdexcept>

namespace loaderlens::test {

namespace {
std::optional<std::uint64_t> env_number(const char* name) {
    const char* text = std::getenv(name);
    if (!text || !*text) return std::nullopt;
    char* end = nullptr;
    const unsigned long long value = std::strtoull(text, &end, 0);
    if (*end != '\0') throw std::invalid_argument(std::string(name) + ": not a number: " + text);
    return value;
}
} // namespace

std::vector<std::uint64_t> fuzz_seeds(const std::vector<std::uint64_t>& fixed) {
    if (auto only = env_number("LOADERLENS_FUZZ_SEED")) return {*only};
    // Drawn once per run of the binary, so that every fuzz suite of a run prints the same one.
    static const std::uint64_t drawn = [] {
        std::random_device device;
        return (static_cast<std::uint64_t>(device()) << 32) | device();
    }();
    std::vector<std::uint64_t> seeds = fixed;
    seeds.push_back(drawn);
    return seeds;
}

std::optional<std::size_t> fuzz_only_case() {
    if (auto only = env_number("LOADERLENS_FUZZ_CASE")) return static_cast<std::size_t>(*only);
    return std::nullopt;
}

std::optional<std::string> fuzz_keep_dir() {
    const char* dir = std::getenv("LOADERLENS_FUZZ_KEEP");
    if (!dir || !*dir) return std::nullopt;
    return std::string(dir);
}

std::string seed_text(std::uint64_t seed) {
    char text[24];
    std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(seed));
    return text;
}

std::string backslash_escaped(const std::string& text) {
    std::string out;
    for (unsigned char ch : text) {
        if (ch == '\'' || ch == '\\') {
            out += '\\';
            out += static_cast<char>(ch);
        } else if (ch < 0x20 || ch >= 0x7f) {
            char escape[8];
            std::snprintf(escape, sizeof escape, "\\x%02x", ch);
            out += escape;
        } else {
            out += static_cast<char>(ch);
        }
    }
    return out;
}

} // namespace loaderlens::test
