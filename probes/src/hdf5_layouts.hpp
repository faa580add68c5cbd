// SPDX-License-Identifier: MIT
// HDF5 files of the layouts mkdata never writes (virtual, external storage, a filter libhdf5 does
// not carry, growable, the newest file format), written through libhdf5's C API, for the tests
// of hostile HDF5 (tests/test_hdf5_hostile.cpp, tests/fuzz_hdf5_damage.cpp). No <hdf5.h> here:
// the tests do not see HDF5's headers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace loaderlens::probes {

struct Hdf5Layout {
    std::string path, dataset = "data";
    std::vector<std::uint64_t> shape{8, 6}; // unsigned bytes, element i = i % 251
    std::vector<std::uint64_t> chunks;      // empty: contiguous
    bool growable = false;                  // axis 0 unlimited (needs chunks)
    bool latest_format = false;             // H5F_LIBVER_LATEST: checksummed metadata, v4 layout
    int gzip = 0;
    // A virtual dataset whose one mapping takes all of it from this file ("." itself) and dataset.
    std::string virtual_file, virtual_dataset;
    std::string external_file; // the raw data stored in this file (written by the caller)
    // A filter of this id, registered here as a pass-through and required: a reader lacks it.
    int unknown_filter = 0;
};
// Throws DatasetError when libhdf5 refuses it.
void write_hdf5_layout(const Hdf5Layout& layout);

} // namespace loaderlens::probes
