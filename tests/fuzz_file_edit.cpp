// SPDX-License-Identifier: MIT
#include "fuzz_file_edit.hpp"

#include "fuzz_runner.hpp"

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace loaderlens::test {

namespace {
// A python3 line that writes `bytes` at `offset` of `shown` (bytes shown as hex).
std::string python_patch(const std::string& shown, std::uint64_t offset, const std::string& bytes) {
    std::string hex;
    for (unsigned char ch : bytes) {
        char two[3];
        std::snprintf(two, sizeof two, "%02x", ch);
        hex += two;
    }
    if (hex.size() > 256) hex = "(" + std::to_string(bytes.size()) + " bytes: see the kept input)";
    return "python3 -c \"f=open('" + shown + "','r+b');f.seek(" + std::to_string(offset) +
           ");f.write(bytes.fromhex('" + hex + "'))\"";
}
} // namespace

std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out.flush()) throw std::runtime_error("cannot write " + path);
}

std::string random_bytes(FuzzRandom& random, std::size_t count) {
    std::string bytes(count, '\0');
    for (auto& byte : bytes)
        byte = static_cast<char>(random.next() & 0xff);
    return bytes;
}

std::string little_endian(std::uint64_t value, int bytes) {
    std::string out;
    for (int i = 0; i < bytes; ++i)
        out += static_cast<char>((value >> (8 * i)) & 0xff);
    return out;
}

Damage truncate_to(const std::string& path, std::uint64_t size, const std::string& shown) {
    const auto before = std::filesystem::file_size(path);
    std::filesystem::resize_file(path, size);
    return {"truncated to " + std::to_string(size) + " of " + std::to_string(before) + " bytes",
            "truncate -s " + std::to_string(size) + " " + shown};
}

Damage flip_bytes(const std::string& path, FuzzRandom& random, int count, std::uint64_t begin,
                  std::uint64_t end, const std::string& shown) {
    std::string bytes = read_bytes(path);
    end = std::min<std::uint64_t>(end, bytes.size());
    Damage damage{"bytes flipped at", ""};
    std::string patches; // python: offset, new byte
    for (int i = 0; i < count && begin < end; ++i) {
        const std::uint64_t offset = begin + random.below(end - begin);
        const auto mask = static_cast<unsigned char>(1 + random.below(255));
        bytes[offset] = static_cast<char>(static_cast<unsigned char>(bytes[offset]) ^ mask);
        damage.description += " " + std::to_string(offset);
        patches += (patches.empty() ? "" : ",") +
                   ("(" + std::to_string(offset) + "," +
                    std::to_string(static_cast<unsigned char>(bytes[offset])) + ")");
    }
    write_bytes(path, bytes);
    damage.reproducer = "python3 -c \"f=open('" + shown +
                        "','r+b')\n[(f.seek(o),f.write(bytes([b]))) for o,b in [" + patches +
                        "]]\"";
    return damage;
}

Damage damage_page(const std::string& path, FuzzRandom& random, std::uint64_t page,
                   std::uint64_t page_size, const std::string& shown) {
    std::string bytes = read_bytes(path);
    const std::uint64_t begin = page * page_size;
    if (begin >= bytes.size()) return {"page " + std::to_string(page) + " is past the end", "true"};
    const std::uint64_t length = std::min<std::uint64_t>(page_size, bytes.size() - begin);
    const std::string page_name = "page " + std::to_string(page) + " (bytes " +
                                  std::to_string(begin) + "-" + std::to_string(begin + length) +
                                  ")";
    switch (random.below(3)) {
    case 0:
        std::fill_n(bytes.begin() + static_cast<std::ptrdiff_t>(begin), length, '\0');
        write_bytes(path, bytes);
        return {page_name + " zeroed",
                "dd if=/dev/zero of=" + shown + " bs=" + std::to_string(page_size) +
                    " seek=" + std::to_string(page) + " count=1 conv=notrunc"};
    case 1: {
        const std::string noise = random_bytes(random, length);
        bytes.replace(begin, length, noise);
        write_bytes(path, bytes);
        return {page_name + " overwritten with random bytes", python_patch(shown, begin, noise)};
    }
    default: {
        Damage flipped = flip_bytes(path, random, 16, begin, begin + length, shown);
        flipped.description = page_name + ": 16 " + flipped.description;
        return flipped;
    }
    }
}

Damage overwrite(const std::string& path, std::uint64_t offset, const std::string& bytes,
                 const std::string& what, const std::string& shown) {
    std::string content = read_bytes(path);
    if (content.size() < offset + bytes.size()) content.resize(offset + bytes.size(), '\0');
    content.replace(offset, bytes.size(), bytes);
    write_bytes(path, content);
    return {what + " (" + std::to_string(bytes.size()) + " bytes at " + std::to_string(offset) +
                ")",
            python_patch(shown, offset, bytes)};
}

} // namespace loaderlens::test
