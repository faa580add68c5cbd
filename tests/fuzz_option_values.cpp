// SPDX-License-Identifier: MIT
#include "fuzz_option_values.hpp"

#include <cstdio>
#include <cstring>

namespace loaderlens::test {

namespace {

// Not a number of any kind, whatever the option.
const std::vector<std::string> never_numbers = {"",     "abc",   "nan", "-nan", "inf",
                                                "-inf", "1e300", "1;2", "--"};

std::vector<HostileValue> numbers(ValueKind kind) {
    std::vector<HostileValue> values;
    for (const auto& text : never_numbers)
        values.push_back({text, true});
    // Whitespace around a number may be trimmed; an error that quotes it must stay one line.
    values.push_back({"\n1", false});
    values.push_back({"1\n", false});
    const bool unsigned_seed = kind == ValueKind::uint64;
    values.push_back({"-1", true});
    values.push_back({"-9223372036854775808", true});
    values.push_back({"0", false});
    values.push_back({"1", false});
    values.push_back({"1.5", true});
    values.push_back({"1e-300", true});
    values.push_back({"0x10", false});
    values.push_back({" 1", false});
    values.push_back({"18446744073709551616", true});          // 2^64
    values.push_back({"9223372036854775808", !unsigned_seed}); // 2^63
    values.push_back({"2147483648", kind == ValueKind::int32});
    values.push_back({"-2147483649", true});
    if (kind != ValueKind::int32) {
        values.push_back({"9223372036854775807", false});
        values.push_back({"1e12", false});
    }
    if (unsigned_seed) values.push_back({"18446744073709551615", false});
    return values;
}

std::vector<HostileValue> reals(ValueKind kind) {
    const bool fraction = kind == ValueKind::fraction;
    std::vector<HostileValue> values;
    for (const auto& text : never_numbers)
        if (text != "1e300") values.push_back({text, true});
    values.push_back({"1e300", fraction});
    values.push_back({"1e309", true}); // inf once parsed
    values.push_back({"-1", fraction});
    values.push_back({"0", fraction});
    values.push_back({"-0", fraction});
    values.push_back({"2", fraction});
    values.push_back({"1e-300", false});
    values.push_back({"4.9e-324", false});
    values.push_back({"0.5", false});
    values.push_back({"1,5", true});
    return values;
}

std::vector<HostileValue> durations() {
    return {{"", true},
            {"abc", true},
            {"-1ms", true},
            {"1e300s", true},
            {"nanms", true},
            {"infs", true},
            {"ms", true},
            {"9223372036854775808us", true},
            {"9223372036854775807s", true}, // overflows in microseconds
            {"18446744073709551616ns", true},
            {"1ms\n", true},
            {"0", false},
            {"-0s", false},
            {"5", false},
            {"1us", false},
            {"0.5ms", false}};
}

std::vector<HostileValue> sizes() {
    return {{"", true},        {"abc", true},
            {"-1", true},      {"1e300", true},
            {"nan", true},     {"18446744073709551616", true},
            {"16EiB", true},   {"99999999999999999999EiB", true},
            {"-0", false},     {"0", false},
            {"1", false},      {"1KiB", false},
            {"1.5MiB", false}, {"1 KiB", false},
            {"0x10", false},   {"1KB", false},
            {"1k", false}};
}

std::vector<HostileValue> percents() {
    return {{"", true},        {"abc", true},   {"nan", true},      {"inf", true},
            {"-1%", true},     {"1e300", true}, {"%", true},        {"-inf%", true},
            {"0", false},      {"0%", false},   {"100%", false},    {"101%", false},
            {"1e-300", false}, {"5%%", false},  {"0.0001%", false}, {"5", false}};
}

std::vector<HostileValue> intervals() {
    return {{"fast=", true},
            {"=1s", true},
            {"fast", true},
            {"bogus=1s", true},
            {"fast=-1ms", true},
            {"fast=1e300s", true},
            {"fast=nan", true},
            {"", true},
            {"fast=100ms=1", true},
            {"fast=0", false},
            {"fast=1ms", false},
            {"residency=0", false},
            {"rollup=9223372036854775807ms", true},
            {"maps=1us", false},
            {"cgroup=1h", false}};
}

std::vector<HostileValue> regexes() {
    return {{"(", true},
            {"[", true},
            {"*", true},
            {"a{2,1}", true},
            {"\\", true},
            {"[[:alpha:]", true},
            {"", false},
            {"a{99999999}", false},
            {"(a*)*$", false},
            {"(?=x)", false},
            {"\\1", false},
            {std::string(100'000, 'a'), false},
            {std::string(10'000, '(') + std::string(10'000, ')'), false},
            {".*worker", false}};
}

std::vector<HostileValue> shapes() {
    std::string many_dims;
    for (int i = 0; i < 40; ++i)
        many_dims += "1x";
    return {{"x", true},
            {"1x", true},
            {"x1", true},
            {"1xx1", true},
            {"-1", true},
            {"nan", true},
            {"1e3", true},
            {"4294967296x4294967296", true},
            {"9223372036854775808", true},
            {"3x32x32\n", true},
            {"0", false},
            {"", false},
            {"9223372036854775807", false},
            {many_dims + "4", false},
            {"1x0x1", false}};
}

std::vector<HostileValue> pids() {
    return {{"0", true},          {"-1", true},
            {"-2", true},         {"2147483647", true},
            {"2147483648", true}, {"4194305", true},
            {"abc", true},        {"", true},
            {"1e3", true},        {"9223372036854775808", true},
            {"-2147483648", true}};
}

} // namespace

std::vector<HostileValue> hostile_values(ValueKind kind, const SpecialPaths& paths,
                                         const std::string& good_input) {
    switch (kind) {
    case ValueKind::int32:
    case ValueKind::int64:
    case ValueKind::uint64:
        return numbers(kind);
    case ValueKind::real:
    case ValueKind::fraction:
        return reals(kind);
    case ValueKind::duration:
        return durations();
    case ValueKind::size:
        return sizes();
    case ValueKind::percent:
        return percents();
    case ValueKind::interval:
        return intervals();
    case ValueKind::regex:
        return regexes();
    case ValueKind::shape:
        return shapes();
    case ValueKind::pid:
        return pids();
    case ValueKind::path_in:
        return {{"", true},
                {paths.missing, true},
                {paths.directory, true}, // empty: not an LMDB environment either
                {paths.fifo, true},
                {paths.zero_device, true},
                {paths.dangling, true},
                {paths.loop, true},
                {paths.long_name, true},
                {paths.newline_copy, false},
                {good_input, false}};
    case ValueKind::path_out:
        return {{"", false},
                {paths.directory, false},
                {paths.missing + "/sub/out", true},
                {paths.fifo, false},
                {paths.null_device, false},
                {paths.full_device, false},
                {paths.dangling, false},
                {paths.loop, false},
                {paths.long_name, true},
                {paths.directory + "/new\nline.out", true},
                {paths.directory + "/esc\x1b[31m.out", false},
                {paths.directory + "/%", false},
                {paths.directory + "/%z%%%p%p%p%p%p%p%p%p%j%s%t%a%N", false},
                {paths.victim + "-link", false}};
    }
    return {};
}

HostileValue random_value(ValueKind kind, FuzzRandom& random, bool long_runs) {
    char text[64];
    // Log-uniform over the bits; for long_runs either small or beyond 2^40.
    auto number = [&]() -> unsigned long long {
        if (long_runs) return random.percent(50) ? random.below(8) : (random.next() | (1ull << 40));
        return random.next() >> random.below(64);
    };
    switch (kind) {
    case ValueKind::int32:
    case ValueKind::int64:
    case ValueKind::uint64:
    case ValueKind::pid:
        std::snprintf(text, sizeof text, "%s%llu", random.percent(20) ? "-" : "", number());
        return {text};
    case ValueKind::real:
    case ValueKind::fraction: {
        const std::uint64_t bits = random.next();
        double value = 0;
        std::memcpy(&value, &bits, sizeof value);
        std::snprintf(text, sizeof text, "%.17g", value);
        return {text};
    }
    case ValueKind::duration:
    case ValueKind::size:
    case ValueKind::percent: {
        // Units that shrink a number (ns, us) keep a duration short; long_runs' huge numbers
        // overflow in any unit.
        static const std::vector<std::string> units = {"",    "ns",  "us",  "ms",  "s", "h",
                                                       "KiB", "MiB", "GiB", "TiB", "%", "x"};
        static const std::vector<std::string> short_units = {"ns", "us", "ms", "x", "%", "KiB"};
        const unsigned long long value = number();
        const std::string& unit =
            long_runs && value < 8 ? random.pick(short_units) : random.pick(units);
        std::snprintf(text, sizeof text, "%llu%s", value, unit.c_str());
        return {text};
    }
    default: {
        // Bytes of any value but NUL (argv cannot hold one).
        std::string bytes;
        for (auto n = random.between(1, 40); n > 0; --n)
            bytes += static_cast<char>(1 + random.below(255));
        return {bytes};
    }
    }
}

} // namespace loaderlens::test
