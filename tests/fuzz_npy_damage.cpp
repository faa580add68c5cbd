// SPDX-License-Identifier: MIT
#include "fuzz_npy_damage.hpp"

#include <stdexcept>

namespace loaderlens::test {

namespace {

// A header as numpy writes one: the dict padded with spaces and a newline to a multiple of 64.
std::string npy_header(const std::string& dict, int major) {
    const std::size_t prefix = 6 + 2 + (major == 1 ? 2 : 4);
    std::string text = dict;
    while ((prefix + text.size() + 1) % 64 != 0)
        text += ' ';
    text += '\n';
    return std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0' +
           little_endian(text.size(), major == 1 ? 2 : 4) + text;
}

std::string dict_with(const std::string& descr, const std::string& fortran,
                      const std::string& shape) {
    return "{'descr': " + descr + ", 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
}

} // namespace

NpyDamage::NpyDamage(std::string good) : good_(std::move(good)), bytes_(read_bytes(good_)) {
    if (bytes_.size() < 10 || bytes_.compare(1, 5, "NUMPY") != 0)
        throw std::runtime_error("fuzz: not a .npy file: " + good_);
    const int major = static_cast<unsigned char>(bytes_[6]);
    const std::size_t length_bytes = major == 1 ? 2 : 4;
    std::size_t length = 0;
    for (std::size_t i = 0; i < length_bytes; ++i)
        length |= static_cast<std::size_t>(static_cast<unsigned char>(bytes_[8 + i])) << (8 * i);
    data_offset_ = 8 + length_bytes + length;
    dict_ = bytes_.substr(8 + length_bytes, length);
}

std::size_t NpyDamage::kinds() {
    return 7;
}

Damage NpyDamage::with_header(const std::string& dict, int major, const std::string& target,
                              const std::string& what) const {
    write_bytes(target, npy_header(dict, major) + bytes_.substr(data_offset_));
    return {what + ": " + dict, "numpy's header of good.npy replaced by " + dict + " (format " +
                                    std::to_string(major) + ", padded to 64 bytes), its data kept"};
}

Damage NpyDamage::make(std::size_t kind, FuzzRandom& random, const std::string& target) const {
    write_bytes(target, bytes_);
    const std::string good_shape = "(64, 4, 8)";
    switch (kind % kinds()) {
    case 0:
        return flip_bytes(target, random, static_cast<int>(random.between(1, 4)), 0, data_offset_,
                          "good.npy");
    case 1:
        return truncate_to(target,
                           random.percent(50)
                               ? random.below(data_offset_ + 1)
                               : data_offset_ + random.below(bytes_.size() - data_offset_),
                           "good.npy");
    case 2: {
        const std::string shape = random.pick<std::string>(
            {"(0,)",
             "()",
             "(-1, 4, 8)",
             "(9223372036854775807, 4, 8)",
             "(9223372036854775808,)",
             "(4294967296, 4294967296)",
             "(65, 4, 8)",
             "(64, 4, 8, 1)",
             "(1, 0)",
             "(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, "
             "1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 64)",
             "5",
             "(64, 4, 8",
             "(64; 4)",
             "(0x40,)",
             "(64.0, 4, 8)",
             "(True,)",
             "(2048,)",
             "(1, 8192)",
             "(3037000500, 3037000500, 8)",
             "(64, -4, -8)"});
        return with_header(dict_with("'<f4'", "False", shape), 1, target, "shape " + shape);
    }
    case 3: {
        const std::string descr = random.pick<std::string>({"'>f4'",
                                                            "'|u1'",
                                                            "'<f16'",
                                                            "'|O'",
                                                            "'<c8'",
                                                            "'<U10'",
                                                            "'|V16'",
                                                            "'garbage'",
                                                            "''",
                                                            "'<f0'",
                                                            "'<i99999999999'",
                                                            "'<f4 '",
                                                            "[('a', '<f4')]",
                                                            "'<M8[ns]'",
                                                            "'|b1'",
                                                            "'<f8'",
                                                            "'<i9223372036854775807'",
                                                            "'<V0'",
                                                            "None",
                                                            "4"});
        return with_header(dict_with(descr, "False", good_shape), 1, target, "descr " + descr);
    }
    case 4: {
        const std::string dict = random.pick<std::string>(
            {dict_with("'<f4'", "True", good_shape), dict_with("'<f4'", "'maybe'", good_shape),
             dict_with("'<f4'", "1", good_shape), dict_with("'<f4'", "None", good_shape),
             "{'fortran_order': False, 'shape': (64, 4, 8), }",
             "{'descr': '<f4', 'shape': (64, 4, 8), }",
             "{'descr': '<f4', 'fortran_order': False, }", "{}", "[]", "",
             "{'descr': '<f4', 'fortran_order': False, 'shape': (64, 4, 8), 'extra': 1, }",
             "{'descr': '<f4', 'fortran_order': False, 'shape': (64, 4, 8), 'descr': '>i8', }",
             "{'descr': '<f4', 'fortran_order': False, 'shape': (64, 4, 8)"});
        return with_header(dict, random.percent(20) ? 2 : 1, target, "header dict");
    }
    case 5: {
        switch (random.below(4)) {
        case 0: {
            const std::uint64_t length = random.pick<std::uint64_t>(
                {0, 1, 0xffff, data_offset_ - 10 + 64, data_offset_ - 11});
            return overwrite(target, 8, little_endian(length, 2),
                             "header length field " + std::to_string(length), "good.npy");
        }
        case 1: {
            const std::string version = random.pick<std::string>(
                {std::string("\0\0", 2), std::string("\x04\0", 2), "\xff\xff",
                 std::string("\x02\0", 2), std::string("\x03\0", 2), std::string("\x01\x07", 2)});
            return overwrite(target, 6, version, "version bytes", "good.npy");
        }
        case 2:
            return overwrite(target, 0, "\x93NUMPX", "magic", "good.npy");
        default: {
            // Format 2 with a 4-byte length past the end of the file.
            std::string header = npy_header(dict_, 2);
            header.replace(
                8, 4,
                little_endian(random.pick<std::uint64_t>({0xffffffffu, 0x7fffffffu, bytes_.size()}),
                              4));
            write_bytes(target, header + bytes_.substr(data_offset_));
            return {"format 2 header whose length field is past the end", "(see the kept input)"};
        }
        }
    }
    default: {
        switch (random.below(3)) {
        case 0:
            write_bytes(target, "");
            return {"empty file", ": > good.npy"};
        case 1:
            write_bytes(target, bytes_ + random_bytes(random, 1 + random.below(300)));
            return {"bytes appended after the data", "head -c 100 /dev/urandom >> good.npy"};
        default:
            write_bytes(target, bytes_.substr(0, 6));
            return {"the magic alone", "truncate -s 6 good.npy"};
        }
    }
    }
}

} // namespace loaderlens::test
