// SPDX-License-Identifier: MIT
// Datasets the reference loader reads: .npy arrays, raw fixed-size records, LMDB environments,
// one dataset of an HDF5 file.
// A dataset is a sequence of records (samples) of equal size; index i is the i-th record.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace loaderlens::probes {

// One line that names the input and what is wrong with it, e.g.
// "data.npy: Fortran-order arrays are not supported (fortran_order: True)".
struct DatasetError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// mkdata could not write its output: the disk or quota is full, the file too large for the file
// system or the device failed (ENOSPC, EDQUOT, EFBIG, EIO). Not a problem of the input: the
// CLI's exit 1, where every other DatasetError is 2.
struct DatasetWriteError : DatasetError {
    using DatasetError::DatasetError;
    // Whether `error` (an errno value) is one of the above.
    static bool is_write_failure(int error);
};

// A dataset that is damaged or not what it claims (truncated, a corrupt page, a record missing),
// found when inspecting it or while reading it. The reason is kept apart from the path: a worker
// sends only the reason to main, in a message of bounded size, and main names the dataset.
struct DatasetDamage : DatasetError {
    DatasetDamage(const std::string& dataset, const std::string& why)
        : DatasetError(dataset + ": " + why), reason(why) {}
    std::string reason;
};

enum class DatasetKind { npy, raw, lmdb, hdf5 };
const char* to_string(DatasetKind kind);

// The .npy header (format versions 1.0, 2.0 and 3.0).
struct NpyHeader {
    int major_version = 1;
    int minor_version = 0;
    std::string descr; // numpy dtype descr, e.g. "<f4", "|u1", ">i8"
    bool fortran_order = false;
    std::vector<std::int64_t> shape;
    std::int64_t itemsize = 0;    // bytes per element, from descr
    std::int64_t data_offset = 0; // bytes from the start of the file to the array data
};

// Reads and validates magic, version, header dict, dtype (no object or structured dtypes), order
// (C only), shape (at least one dimension: the first is the sample axis) and the file size
// (exactly data_offset + product(shape) * itemsize). Throws DatasetError.
NpyHeader read_npy_header(const std::string& path);

// Bytes per element of a simple numpy descr ("<f4" -> 4); throws DatasetError for object ("O"),
// unknown or structured dtypes. `path` only names the input in the message.
std::int64_t npy_itemsize(const std::string& descr, const std::string& path);

// The complete header (magic, version, length, dict, padding to a multiple of 64 bytes, newline)
// for an array of `shape` and `descr` in C order. version 0 picks the lowest that fits (1, else 2).
std::string make_npy_header(const std::string& descr, const std::vector<std::int64_t>& shape,
                            int version = 0);

// What the loader needs to know about a dataset.
struct DatasetLayout {
    DatasetKind kind = DatasetKind::raw;
    std::string path;      // as given: the file, or the LMDB environment directory
    std::string data_file; // the file whose pages the loader maps: path, or path/data.mdb
    std::int64_t record_count = 0;
    std::int64_t record_bytes = 0;
    std::int64_t data_offset = 0; // npy: header size; raw: 0; lmdb: unused (0)
    std::string description;      // e.g. "npy <f4 (100000, 3, 32, 32)", "lmdb 5000 x 65536 B"
    // hdf5 only: the dataset read, its storage and filters (the diagnosis needs them).
    struct Hdf5 {
        std::string dataset;              // "/data"
        std::string storage;              // "contiguous", "chunked" or "compact"
        std::vector<std::int64_t> shape;  // the whole dataset's
        std::vector<std::int64_t> chunks; // chunk shape (chunked only)
        std::int64_t chunk_bytes = 0;     // bytes of one uncompressed chunk (chunked only)
        std::vector<std::string> filters; // "deflate", "shuffle", ...
        std::string type;                 // e.g. "<f4"
        std::int64_t file_bytes = 0;      // the file's size when inspected
    } hdf5;
};

// Detects the kind: a directory -> LMDB (must be an environment with data.mdb; counts entries and
// checks the value size of the first and last record), a file starting with the .npy magic -> npy,
// a file with HDF5's superblock signature (or named *.h5, *.hdf5, which must have it) -> the HDF5
// dataset `hdf5_dataset` (empty: the only one in the file, else "data"),
// anything else -> raw, which needs raw_record_bytes (and a size that is a multiple of it).
// Throws DatasetError (missing file, not an LMDB environment, empty dataset...).
DatasetLayout inspect_dataset(const std::string& path,
                              std::optional<std::int64_t> raw_record_bytes = std::nullopt,
                              const std::string& hdf5_dataset = "");

// LMDB keys: the sample index as 8 bytes, big-endian, so that key order is index order.
std::string lmdb_key(std::int64_t index);

} // namespace loaderlens::probes
