// SPDX-License-Identifier: MIT
// Dataset generators (`loaderlens mkdata`): deterministic content from a seed.
#pragma once

#include "loaderlens/probes/dataset.hpp"

#include <functional>

namespace loaderlens::probes {

struct MkdataOptions {
    DatasetKind kind = DatasetKind::npy;
    std::string path;                       // file (npy, raw) or directory (lmdb)
    std::int64_t count = 0;                 // records
    std::vector<std::int64_t> sample_shape; // npy, hdf5: shape of one record; (count, ...) in all
    std::string dtype = "f4"; // npy, hdf5: numpy code (f4 f8 f2 i1 i2 i4 i8 u1 u2 u4 u8 b1)
    std::vector<std::int64_t> hdf5_chunks; // hdf5: chunk shape (all dimensions); empty: contiguous
    int hdf5_gzip = 0;                     // hdf5: gzip level 1-9 (needs chunks); 0: none
    std::string hdf5_dataset = "data";     // hdf5: the dataset's name
    int npy_version = 0;                   // 0 = the lowest version that fits
    std::int64_t record_bytes = 0;         // raw: record size; lmdb: value size
    std::uint64_t seed = 0;
    bool force = false; // replace an existing file or directory
    // Called now and then with bytes written so far and in all (for a progress bar).
    std::function<void(std::int64_t done, std::int64_t total)> progress;
};

// Writes the dataset under a temporary name next to `path` and renames it into place, so an error
// or an interrupt never leaves a half-written dataset under the final name. Record i's content
// depends only on (seed, i). Throws DatasetError (exists without force, bad options, I/O error).
DatasetLayout make_dataset(const MkdataOptions& options);

} // namespace loaderlens::probes
