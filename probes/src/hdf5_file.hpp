// SPDX-License-Identifier: MIT
// HDF5 datasets through the C API (libhdf5, serial, the sec2 driver): telling an HDF5 file by its
// superblock signature, inspecting one dataset of it, reading records (slices along axis 0) with
// hyperslab selections, and writing one for mkdata. Every HDF5 failure becomes one line: the
// library's own error stack printing is switched off (docs/hdf5.md).
#pragma once

#include "loaderlens/probes/dataset.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <hdf5.h>
#include <string>
#include <vector>

namespace loaderlens::probes {

// Whether the file has HDF5's superblock signature at 0, 512, 1024, 2048... (where HDF5 looks).
// Throws DatasetError when the file cannot be read.
bool has_hdf5_signature(const std::string& path);

// Inspects `dataset_name` of the HDF5 file (empty: the only dataset in the root group, else
// "data"). Refuses rank < 2, empty or unsupported types (compound, variable-length,
// strings, references) with one line naming the file and the dataset.
DatasetLayout inspect_hdf5(const std::string& path, const std::string& dataset_name);

struct LoaderOptions;
// Throws LoaderError for loader options that mean nothing for this dataset: the map and advice
// knobs for HDF5, the HDF5 knobs for the other kinds.
void validate_hdf5_options(const LoaderOptions& options, const DatasetLayout& layout);

// Switches HDF5's automatic error printing off for this process (and the children it forks):
// errors are read from the stack and reported as one line instead.
void silence_hdf5_errors();

// One opened dataset: file, dataset, its type and file dataspace; closed by the destructor.
class Hdf5Dataset {
  public:
    // chunk_cache_bytes < 0: HDF5's default chunk cache (1 MiB per dataset). Throws LoaderError
    // when the file cannot be opened as it was inspected (it changed since).
    Hdf5Dataset(const DatasetLayout& layout, std::int64_t chunk_cache_bytes);
    ~Hdf5Dataset();
    Hdf5Dataset(const Hdf5Dataset&) = delete;
    Hdf5Dataset& operator=(const Hdf5Dataset&) = delete;

    // Records [index, index + count) straight into `dest`, with no type conversion (the memory
    // type is the file's type). A file shorter than inspected throws LoaderError (it changed
    // under the loader: a failed run); any other read failure DatasetDamage (a damaged chunk).
    void read(std::int64_t index, std::int64_t count, std::byte* dest);

  private:
    void close();
    DatasetLayout layout_;
    hid_t file_ = -1, dataset_ = -1, type_ = -1, space_ = -1, access_ = -1;
    std::vector<hsize_t> dims_;
};

// The innermost message of HDF5's error stack (then clears it), e.g. "unable to open file".
std::string hdf5_error_text();

// What mkdata writes: one dataset of `count` records of `sample_shape`, contiguous or chunked
// with `chunks` (the whole chunk shape, first dimension included), gzip `gzip_level` (0: none).
struct Hdf5WriteSpec {
    std::string path, dataset_name = "data";
    std::int64_t count = 0;
    std::vector<std::int64_t> sample_shape, chunks;
    int gzip_level = 0;
    std::string dtype; // f2 f4 f8 i1..i8 u1..u8 b1
    std::int64_t record_bytes = 0;
};
// fill(first, count, out): writes records [first, first + count) to out.
using Hdf5Fill = std::function<void(std::int64_t, std::int64_t, std::byte*)>;
// Writes records in slabs of about `slab_bytes`. Throws DatasetError / DatasetWriteError.
void write_hdf5(const Hdf5WriteSpec& spec, std::int64_t slab_bytes, const Hdf5Fill& fill,
                const std::function<void(std::int64_t)>& progress);

} // namespace loaderlens::probes
