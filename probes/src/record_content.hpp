// SPDX-License-Identifier: MIT
// What `loaderlens mkdata` writes into a record: numpy-compatible dtypes and a deterministic
// content per (seed, record index), the same whatever the count, order or chunking.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace loaderlens::probes {

enum class Fill { random_bits, boolean, float16, float32, float64 };

struct Dtype {
    std::string_view code;
    Fill fill;
    int itemsize;
};

// The dtype of a numpy code (f4, u1, b1...); DatasetError naming the known ones otherwise.
const Dtype& find_dtype(const std::string& code);
// The numpy header's descr of a dtype: "<f4" (native byte order), "|u1".
std::string numpy_descr(const Dtype& dtype);
// Raw files' and LMDB values' bytes.
inline constexpr Dtype raw_bytes{"u1", Fill::random_bits, 1};

// The content of one record: a splitmix64 stream seeded from (seed, index) alone, so that a
// record is the same whatever the count, the order or the chunking it was written with.
class RecordContent {
  public:
    RecordContent(std::uint64_t seed, std::int64_t index, const Dtype& dtype);
    // The next `bytes` of the record: a multiple of 8 except for the record's last piece.
    void fill(std::byte* out, std::int64_t bytes);

  private:
    std::uint64_t next();

    std::uint64_t state_;
    const Dtype& dtype_;
};

} // namespace loaderlens::probes
