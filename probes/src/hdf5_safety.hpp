// SPDX-License-Identifier: MIT
// What a hostile HDF5 file must not hand to libhdf5's reading code (loaderlens issue 27, N7).
// libhdf5 1.10 trusts much of what it decodes: a virtual dataset whose source is itself recurses
// until the stack overflows, external raw storage reads any file the file names (/etc/shadow,
// /dev/zero), a filter it lacks may be loaded as a plugin, a chunk index that disagrees with the
// chunk shape gets copied through. So every dataset is checked with libhdf5's own query API after
// H5Dopen2 and before any H5Dread; what fails is refused as a dataset that is not what it claims.
#pragma once

#include <cstdint>
#include <hdf5.h>
#include <string>
#include <vector>

namespace loaderlens::probes::hdf5_safety {

// Why the dataset must not be read, or "" when it may be. `dims`: its shape; `file_bytes`: the
// file's size; `element_bytes`: H5Tget_size of its type.
std::string refusal(hid_t dataset, hid_t plist, const std::vector<hsize_t>& dims,
                    std::uint64_t element_bytes, std::uint64_t file_bytes);

} // namespace loaderlens::probes::hdf5_safety
