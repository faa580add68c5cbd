// SPDX-License-Identifier: MIT
#include "fuzz_values.hpp"

#include <nlohmann/json.hpp>

namespace loaderlens::test {

namespace {

std::string repeated(const std::string& unit, std::size_t times) {
    std::string text;
    text.reserve(unit.size() * times);
    for (std::size_t i = 0; i < times; ++i)
        text += unit;
    return text;
}

std::string hex_blob(const std::vector<std::uint32_t>& words) {
    static const char digits[] = "0123456789ABCDEF";
    std::string hex = "X'";
    for (std::uint32_t word : words)
        for (int byte = 0; byte < 4; ++byte) { // little-endian, as the recording stores them
            const unsigned value = (word >> (8 * byte)) & 0xff;
            hex += digits[value >> 4];
            hex += digits[value & 0xf];
        }
    return hex + "'";
}

// A Python string literal of `text`.
std::string python_literal(const std::string& text) {
    return "'" + backslash_escaped(text) + "'";
}

// Deep nesting and long arrays: what a parser without a depth bound recurses on.
JsonValue structural_json(FuzzRandom& random) {
    switch (random.below(3)) {
    case 0: {
        const std::size_t depth = random.pick<std::size_t>({64, 1000, 100000});
        return {repeated("[", depth) + repeated("]", depth),
                "'['*" + std::to_string(depth) + "+']'*" + std::to_string(depth),
                "[[[...]]] " + std::to_string(depth) + " deep"};
    }
    case 1: {
        const std::size_t depth = random.pick<std::size_t>({1000, 100000});
        return {repeated("{\"a\":", depth) + "1" + repeated("}", depth),
                "'{\"a\":'*" + std::to_string(depth) + "+'1'+'}'*" + std::to_string(depth),
                "{\"a\":{\"a\":...}} " + std::to_string(depth) + " deep"};
    }
    default: {
        const std::size_t length = random.pick<std::size_t>({100000, 1000000});
        return {"[" + repeated("1,", length - 1) + "1]",
                "'['+'1,'*" + std::to_string(length - 1) + "+'1]'",
                "an array of " + std::to_string(length) + " numbers"};
    }
    }
}

JsonValue literal_json(const std::string& text, const std::string& what) {
    return {text, python_literal(text), what + ": " + shortened(text, 60)};
}

} // namespace

std::vector<std::string> extreme_integers() {
    return {"9223372036854775807",
            "-9223372036854775808",
            "-1",
            "0",
            "1",
            "2147483648",
            "-2147483649",
            "-2147483648",
            "4294967296",
            "9007199254740993"};
}

std::vector<std::string> wrong_type_values(const std::string& declared_type) {
    if (declared_type == "TEXT") return {"12345", "-1", "1.5", "X'FF00'", "NULL", "zeroblob(4)"};
    if (declared_type == "BLOB") return {"'abc'", "12", "1.5", "NULL", "''"};
    return {"'abc'",  "''",      "X'00'", "X'DEADBEEF01'",         "1.5",      "1e308",
            "-1e308", "'12abc'", "NULL",  "'9223372036854775808'", "char(10)", "9.9e18"};
}

std::vector<std::string> blob_values(FuzzRandom& random, std::int64_t buckets) {
    const auto n = static_cast<std::size_t>(std::max<std::int64_t>(buckets, 1));
    std::vector<std::uint32_t> noise(std::min<std::size_t>(n, 4096));
    for (auto& word : noise)
        word = static_cast<std::uint32_t>(random.next());
    std::vector<std::string> values = {
        "NULL",
        "X''",
        "zeroblob(0)",
        "zeroblob(1)",
        "zeroblob(3)",
        hex_blob({0x7fffffff}),
        "zeroblob(" + std::to_string(4 * (n - 1)) + ")",
        "zeroblob(" + std::to_string(4 * n + 4) + ")",
        "zeroblob(" + std::to_string(8 * n) + ")",
        hex_blob(std::vector<std::uint32_t>(n, 0xffffffffu)), // -1 in every bucket
        hex_blob(std::vector<std::uint32_t>(n, 0x7fffffffu)), // INT32_MAX
        hex_blob(std::vector<std::uint32_t>(n, 0x80000000u)), // INT32_MIN
        hex_blob(noise),
        "zeroblob(65536)",
        "zeroblob(4194304)",
        "'text'",
        "12",
    };
    // The size that made a release build read 40 MB past its buffer (issue 10, D6): now and then.
    if (random.percent(5)) values = {"zeroblob(40000000)"};
    return values;
}

std::vector<std::string> meta_values() {
    return {"'abc'",
            "''",
            "' 1'",
            "'1 '",
            "'1e3'",
            "'-1'",
            "'0'",
            "'9223372036854775807'",
            "'-9223372036854775808'",
            "'9223372036854775808'",
            "'99999999999999999999'",
            "'0x10'",
            "'1.5'",
            "char(10)",
            "'nan'",
            "'inf'",
            "'+5'",
            "'1e-300'",
            "replace(hex(zeroblob(500000)), '00', 'x')",
            "X'00'",
            "12345",
            "-1",
            "CAST(X'FFFE' AS TEXT)",
            "NULL",
            "'1'||char(10)||'2'"};
}

std::vector<std::string> hostile_texts() {
    return {"'a'||char(10)||'b'",
            "char(27)||'[31mred'",
            "CAST(X'FFFE80' AS TEXT)",
            "''",
            "replace(hex(zeroblob(500000)), '00', 'x')",
            "'bogus'",
            "CAST(X'610062' AS TEXT)",
            "'%s%n%x'",
            "'\"q\",c'",
            "char(13)",
            "'-'",
            "'main'",
            "'worker'"};
}

JsonValue random_config_json(FuzzRandom& random, const std::string& good_config) {
    switch (random.below(4)) {
    case 0:
        return structural_json(random);
    case 1:
        return literal_json(random.pick<std::string>(
                                {"{", "", "[1,", "nul", "{\"a\":1}}", "{\"records\":", "\xff\xfe"}),
                            "invalid JSON");
    case 2:
        return literal_json(random.pick<std::string>({"null", "[]", "\"x\"", "1", "true", "{}"}),
                            "JSON of another type");
    default:
        break;
    }
    nlohmann::json config = nlohmann::json::parse(good_config, nullptr, false);
    if (!config.is_object() || config.empty()) return structural_json(random);
    auto field = config.begin();
    std::advance(field, static_cast<std::ptrdiff_t>(random.below(config.size())));
    const std::string key = field.key();
    const std::vector<nlohmann::json> hostile = {"abc",
                                                 -1,
                                                 1e308,
                                                 INT64_MAX,
                                                 INT64_MIN,
                                                 UINT64_MAX,
                                                 nullptr,
                                                 nlohmann::json::array(),
                                                 nlohmann::json::object(),
                                                 "",
                                                 1.5,
                                                 -0.0,
                                                 "\n"};
    config[key] = random.pick(hostile);
    return literal_json(config.dump(), "field " + key + " = " + config[key].dump());
}

JsonValue random_workers_json(FuzzRandom& random) {
    if (random.percent(25)) return structural_json(random);
    return literal_json(
        random.pick<std::string>({"[-1]", "[9223372036854775807,9223372036854775807]", "[\"a\"]",
                                  "[[1]]", "[1e308]", "[]", "{}", "null", "[-9223372036854775808]",
                                  "[18446744073709551615]", "x", ""}),
        "JSON");
}

std::string shortened(const std::string& text, std::size_t length) {
    if (text.size() <= length) return text;
    return text.substr(0, length) + "... (" + std::to_string(text.size()) + " bytes)";
}

} // namespace loaderlens::test
