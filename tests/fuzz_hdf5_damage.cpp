// SPDX-License-Identifier: MIT
#include "fuzz_hdf5_damage.hpp"

#include "../probes/src/hdf5_layouts.hpp"

#include <cstring>
#include <stdexcept>

namespace loaderlens::test {

namespace {

using loaderlens::probes::Hdf5Layout;

template <typename T> std::string encoded(std::initializer_list<T> values) {
    std::string out;
    for (T v : values)
        out.append(reinterpret_cast<const char*>(&v), sizeof v);
    return out;
}

// Where `needle` is in `bytes`: found exactly once, by reading the good file back.
std::size_t find_once(const std::string& bytes, const std::string& needle, const char* what) {
    const std::size_t at = bytes.find(needle);
    if (at == std::string::npos || bytes.find(needle, at + 1) != std::string::npos)
        throw std::runtime_error(std::string("fuzz: the good HDF5 file has no single ") + what);
    return at;
}

// The chunk shape (16, 4, 8) and element size 1 as a version 3 layout message stores them.
const std::string chunk_needle = encoded<std::uint32_t>({16, 4, 8, 1});
// The dataspace's dimensions (64, 4, 8), then the same maximum dimensions.
const std::string space_needle = encoded<std::uint64_t>({64, 4, 8, 64, 4, 8});

Damage written(const Hdf5Layout& layout, const std::string& what) {
    loaderlens::probes::write_hdf5_layout(layout);
    return {what, "written with libhdf5 (probes::write_hdf5_layout): " + what};
}

} // namespace

Hdf5Damage::Hdf5Damage(const std::string& dir) {
    for (int variant = 0; variant < 4; ++variant) {
        Hdf5Layout layout;
        layout.path = dir + "/good" + std::to_string(variant) + ".h5";
        layout.shape = {64, 4, 8};
        if (variant != 3) layout.chunks = {16, 4, 8};
        layout.gzip = variant == 1 ? 4 : 0;
        layout.latest_format = variant == 2;
        loaderlens::probes::write_hdf5_layout(layout);
        good_.push_back({layout.path, read_bytes(layout.path)});
    }
    find_once(good_[0].bytes, chunk_needle, "chunk shape");
    find_once(good_[1].bytes, chunk_needle, "chunk shape");
}

std::size_t Hdf5Damage::kinds() {
    return 10;
}

const Hdf5Damage::Good& Hdf5Damage::pick(FuzzRandom& random, bool default_format_chunked) const {
    return good_[static_cast<std::size_t>(random.below(default_format_chunked ? 2 : good_.size()))];
}

Damage Hdf5Damage::make(std::size_t kind, FuzzRandom& random, const std::string& target) const {
    const std::size_t k = kind % kinds();
    const Good& good = pick(random, k == 2 || k == 3 || k == 4);
    write_bytes(target, good.bytes);
    const std::string shown = "good.h5";
    const std::uint64_t size = good.bytes.size();
    switch (k) {
    case 0:
        return flip_bytes(target, random, static_cast<int>(random.between(1, 4)), 0, size, shown);
    case 1:
        return truncate_to(target, random.below(size), shown);
    case 2: { // the chunk shape: one dimension (or the element size) of another value
        const std::size_t at = find_once(good.bytes, chunk_needle, "chunk shape");
        const std::size_t dimension = random.below(4);
        const std::uint32_t value = static_cast<std::uint32_t>(
            random.pick<std::uint64_t>({0, 1, 2, 3, 5, 7, 15, 17, 32, 63, 64, 65, 1000, 65536,
                                        0x7fffffff, 0xffffffff, random.below(1u << 31)}));
        return overwrite(
            target, at + 4 * dimension, encoded<std::uint32_t>({value}),
            "chunk dimension " + std::to_string(dimension) + " = " + std::to_string(value), shown);
    }
    case 3: { // the chunk index's address, just before the chunk shape
        const std::size_t at = find_once(good.bytes, chunk_needle, "chunk shape") - 8;
        const std::uint64_t address =
            random.pick<std::uint64_t>({0, 1, size, size - 1, size - 8, ~0ull, ~0ull - 1,
                                        1ull << 40, random.below(size), 48, 96});
        return overwrite(target, at, encoded<std::uint64_t>({address}),
                         "chunk index address = " + std::to_string(address), shown);
    }
    case 4: { // a few bytes around the layout message
        const std::size_t at = find_once(good.bytes, chunk_needle, "chunk shape");
        return flip_bytes(target, random, static_cast<int>(random.between(1, 3)),
                          at > 64 ? at - 64 : 0, at + 64, shown);
    }
    case 5: { // the dataspace: a dimension or a maximum of another value
        const Good& base = good_[static_cast<std::size_t>(random.below(2))];
        write_bytes(target, base.bytes);
        const std::size_t at = find_once(base.bytes, space_needle, "dataspace");
        const std::size_t dimension = random.below(6);
        const std::uint64_t value = random.pick<std::uint64_t>(
            {0, 1, 3, 63, 65, 128, 1ull << 32, 1ull << 62, ~0ull, ~0ull - 1, random.next()});
        return overwrite(
            target, at + 8 * dimension, encoded<std::uint64_t>({value}),
            "dataspace field " + std::to_string(dimension) + " = " + std::to_string(value), shown);
    }
    case 6:
        return flip_bytes(target, random, static_cast<int>(random.between(1, 3)), 0, 96, shown);
    case 7: {
        Hdf5Layout layout;
        layout.path = target;
        layout.shape = {64, 4, 8};
        layout.virtual_file = random.pick<std::string>({".", good.path, "/nonexistent.h5", target});
        layout.virtual_dataset = random.pick<std::string>({"/data", "/missing"});
        layout.latest_format = random.percent(50);
        return written(layout, "virtual dataset from " + layout.virtual_file + ":" +
                                   layout.virtual_dataset);
    }
    case 8: {
        Hdf5Layout layout;
        layout.path = target;
        layout.shape = {64, 4, 8};
        layout.external_file = random.pick<std::string>(
            {"/dev/zero", "/etc/shadow", "/proc/self/mem", "/", target + ".missing", target});
        return written(layout, "raw data in the external file " + layout.external_file);
    }
    default: {
        Hdf5Layout layout;
        layout.path = target;
        layout.shape = {64, 4, 8};
        layout.chunks = {16, 4, 8};
        layout.unknown_filter = static_cast<int>(random.between(256, 32767));
        return written(layout, "chunks through filter " + std::to_string(layout.unknown_filter) +
                                   " (a pass-through the reader lacks)");
    }
    }
}

} // namespace loaderlens::test
