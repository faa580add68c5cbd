// SPDX-License-Identifier: MIT
#include "record_content.hpp"

#include "loaderlens/probes/dataset.hpp"
#include "splitmix.hpp"

#include <array>
#include <bit>
#include <cstring>

namespace loaderlens::probes {

namespace {

constexpr std::array<Dtype, 12> dtypes{{{"f2", Fill::float16, 2},
                                        {"f4", Fill::float32, 4},
                                        {"f8", Fill::float64, 8},
                                        {"i1", Fill::random_bits, 1},
                                        {"i2", Fill::random_bits, 2},
                                        {"i4", Fill::random_bits, 4},
                                        {"i8", Fill::random_bits, 8},
                                        {"u1", Fill::random_bits, 1},
                                        {"u2", Fill::random_bits, 2},
                                        {"u4", Fill::random_bits, 4},
                                        {"u8", Fill::random_bits, 8},
                                        {"b1", Fill::boolean, 1}}};

using splitmix::mix;

// k / 2048 for k in [0, 2048) as IEEE half precision, where it is exact (11 significant bits).
std::uint16_t half_of_eleven_bits(unsigned k) {
    if (k == 0) return 0;
    const int top = std::bit_width(k) - 1; // k / 2048 = 1.m * 2^(top - 11)
    const auto exponent = static_cast<std::uint16_t>(top - 11 + 15);
    const auto mantissa = static_cast<std::uint16_t>((k << (10 - top)) & 0x3ff);
    return static_cast<std::uint16_t>(exponent << 10 | mantissa);
}

template <class T> void store(std::byte* out, T value) {
    std::memcpy(out, &value, sizeof value);
}

} // namespace

const Dtype& find_dtype(const std::string& code) {
    for (const Dtype& dtype : dtypes)
        if (dtype.code == code) return dtype;
    std::string known;
    for (const Dtype& dtype : dtypes)
        known += (known.empty() ? "" : " ") + std::string(dtype.code);
    throw DatasetError("--dtype " + code + ": unknown dtype (one of " + known + ")");
}

std::string numpy_descr(const Dtype& dtype) {
    if (dtype.itemsize == 1) return "|" + std::string(dtype.code);
    return (std::endian::native == std::endian::little ? "<" : ">") + std::string(dtype.code);
}

RecordContent::RecordContent(std::uint64_t seed, std::int64_t index, const Dtype& dtype)
    : state_(mix(seed) ^ mix(static_cast<std::uint64_t>(index) + 0x632be59bd9b4e019ULL)),
      dtype_(dtype) {}

std::uint64_t RecordContent::next() {
    return mix(state_ += splitmix::gamma);
}

void RecordContent::fill(std::byte* out, std::int64_t bytes) {
    std::int64_t i = 0;
    switch (dtype_.fill) {
    case Fill::random_bits:
        // Little-endian whatever the host, so that the bytes depend on the seed only.
        for (; i < bytes; i += 8) {
            std::uint64_t word = next();
            for (std::int64_t k = i; k < i + 8 && k < bytes; ++k, word >>= 8)
                out[k] = static_cast<std::byte>(word & 0xff);
        }
        break;
    case Fill::boolean:
        for (; i < bytes; ++i)
            out[i] = static_cast<std::byte>(next() & 1);
        break;
    case Fill::float16:
        for (; i + 2 <= bytes; i += 2)
            store(out + i, half_of_eleven_bits(static_cast<unsigned>(next() >> 53)));
        break;
    case Fill::float32:
        for (; i + 4 <= bytes; i += 4)
            store(out + i, static_cast<float>(next() >> 40) * 0x1p-24f);
        break;
    case Fill::float64:
        for (; i + 8 <= bytes; i += 8)
            store(out + i, static_cast<double>(next() >> 11) * 0x1p-53);
        break;
    }
}

} // namespace loaderlens::probes
