// SPDX-License-Identifier: MIT
// `mkdata hdf5`: one dataset of (count, *sample_shape), contiguous or chunked, optionally gzip,
// written in slabs of bounded size with hyperslab selections (docs/datasets.md).
#include "hdf5_file.hpp"
#include "hdf5_layouts.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace loaderlens::probes {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
    const int error = errno;
    const std::string message = path + ": " + what;
    if (DatasetWriteError::is_write_failure(error)) throw DatasetWriteError(message);
    throw DatasetError(message);
}

// Closes an HDF5 identifier on every exit path.
struct Owned {
    hid_t id = -1;
    herr_t (*close)(hid_t) = nullptr;
    ~Owned() {
        if (id >= 0 && close) close(id);
    }
};

// The file type of a dtype code, in the machine's byte order like mkdata's .npy files; bool as
// h5py stores numpy bool (an enum of int8: FALSE 0, TRUE 1), half precision as h5py's IEEE
// binary16 (HDF5 1.10 has no predefined one).
hid_t file_type(const std::string& dtype) {
    if (dtype == "b1") {
        const hid_t type = H5Tenum_create(H5T_NATIVE_INT8);
        const std::int8_t no = 0, yes = 1;
        H5Tenum_insert(type, "FALSE", &no);
        H5Tenum_insert(type, "TRUE", &yes);
        return type;
    }
    if (dtype == "f2") {
        const hid_t type = H5Tcopy(H5T_NATIVE_FLOAT);
        H5Tset_fields(type, 15, 10, 5, 0, 10);
        H5Tset_size(type, 2);
        H5Tset_ebias(type, 15);
        return type;
    }
    const hid_t predefined = dtype == "f4"   ? H5T_NATIVE_FLOAT
                             : dtype == "f8" ? H5T_NATIVE_DOUBLE
                             : dtype == "i1" ? H5T_NATIVE_INT8
                             : dtype == "i2" ? H5T_NATIVE_INT16
                             : dtype == "i4" ? H5T_NATIVE_INT32
                             : dtype == "i8" ? H5T_NATIVE_INT64
                             : dtype == "u1" ? H5T_NATIVE_UINT8
                             : dtype == "u2" ? H5T_NATIVE_UINT16
                             : dtype == "u4" ? H5T_NATIVE_UINT32
                             : dtype == "u8" ? H5T_NATIVE_UINT64
                                             : -1;
    return predefined < 0 ? -1 : H5Tcopy(predefined);
}

} // namespace

void write_hdf5(const Hdf5WriteSpec& spec, std::int64_t slab_bytes, const Hdf5Fill& fill,
                const std::function<void(std::int64_t)>& progress) {
    silence_hdf5_errors();
    const std::string& path = spec.path;
    std::vector<hsize_t> dims{static_cast<hsize_t>(spec.count)};
    for (std::int64_t d : spec.sample_shape)
        dims.push_back(static_cast<hsize_t>(d));
    if (dims.size() < 2)
        throw DatasetError("--shape: an HDF5 sample needs at least one dimension (the dataset's "
                           "rank must be 2 or more)");
    Owned create{H5Pcreate(H5P_DATASET_CREATE), H5Pclose};
    if (!spec.chunks.empty()) {
        if (spec.chunks.size() != dims.size())
            throw DatasetError("--chunks: " + std::to_string(spec.chunks.size()) +
                               " dimensions, the dataset has " + std::to_string(dims.size()) +
                               " (the first is along the samples)");
        std::vector<hsize_t> chunks;
        std::int64_t elements = 1;
        for (std::size_t i = 0; i < dims.size(); ++i) {
            if (spec.chunks[i] < 1 || static_cast<hsize_t>(spec.chunks[i]) > dims[i])
                throw DatasetError("--chunks: dimension " + std::to_string(i) + " is " +
                                   std::to_string(spec.chunks[i]) + ", expected 1.." +
                                   std::to_string(dims[i]));
            chunks.push_back(static_cast<hsize_t>(spec.chunks[i]));
            if (__builtin_mul_overflow(elements, spec.chunks[i], &elements) ||
                elements > (std::int64_t{1} << 32))
                throw DatasetError("--chunks: HDF5 chunks hold at most 2^32 elements (4 GiB)");
        }
        H5Pset_chunk(create.id, static_cast<int>(chunks.size()), chunks.data());
        if (spec.gzip_level > 0) H5Pset_deflate(create.id, static_cast<unsigned>(spec.gzip_level));
    } else if (spec.gzip_level > 0) {
        throw DatasetError("--gzip needs --chunks: HDF5 compresses chunks, not contiguous data");
    }
    Owned type{file_type(spec.dtype), H5Tclose};
    if (type.id < 0) throw DatasetError("--dtype " + spec.dtype + ": not supported for HDF5");

    Owned file{H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose};
    if (file.id < 0) fail(path, "cannot create the HDF5 file (" + hdf5_error_text() + ")");
    Owned space{H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose};
    Owned dataset{H5Dcreate2(file.id, spec.dataset_name.c_str(), type.id, space.id, H5P_DEFAULT,
                             create.id, H5P_DEFAULT),
                  H5Dclose};
    if (dataset.id < 0) fail(path, "cannot create the dataset (" + hdf5_error_text() + ")");

    const std::int64_t per_slab = std::max<std::int64_t>(1, slab_bytes / spec.record_bytes);
    std::vector<std::byte> buffer(
        static_cast<std::size_t>(std::min(per_slab, spec.count) * spec.record_bytes));
    for (std::int64_t first = 0; first < spec.count; first += per_slab) {
        const std::int64_t n = std::min(per_slab, spec.count - first);
        fill(first, n, buffer.data());
        std::vector<hsize_t> start(dims.size(), 0), counts = dims;
        start[0] = static_cast<hsize_t>(first);
        counts[0] = static_cast<hsize_t>(n);
        Owned memory{H5Screate_simple(static_cast<int>(counts.size()), counts.data(), nullptr),
                     H5Sclose};
        errno = 0;
        if (H5Sselect_hyperslab(space.id, H5S_SELECT_SET, start.data(), nullptr, counts.data(),
                                nullptr) < 0 ||
            H5Dwrite(dataset.id, type.id, memory.id, space.id, H5P_DEFAULT, buffer.data()) < 0)
            fail(path, "cannot write records " + std::to_string(first) + ".." +
                           std::to_string(first + n - 1) + " (" + hdf5_error_text() + ")");
        progress(n * spec.record_bytes);
    }
    errno = 0;
    const herr_t dataset_closed = H5Dclose(dataset.id);
    dataset.id = -1;
    const herr_t file_closed = H5Fclose(file.id); // flushes: a full disk shows here
    file.id = -1;
    if (dataset_closed < 0 || file_closed < 0)
        fail(path, "cannot finish the HDF5 file (" + hdf5_error_text() + ")");
}

} // namespace loaderlens::probes

namespace loaderlens::probes {

namespace {
std::size_t pass_through(unsigned, std::size_t, const unsigned[], std::size_t bytes, std::size_t*,
                         void**) {
    return bytes;
}
} // namespace

void write_hdf5_layout(const Hdf5Layout& l) {
    silence_hdf5_errors();
    const auto refused = [&](const std::string& what) {
        throw DatasetError(l.path + ": " + what + ": " + hdf5_error_text());
    };
    Owned access{H5Pcreate(H5P_FILE_ACCESS), H5Pclose};
    if (l.latest_format) H5Pset_libver_bounds(access.id, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
    Owned file{H5Fcreate(l.path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.id), H5Fclose};
    if (file.id < 0) refused("cannot create");
    std::vector<hsize_t> dims(l.shape.begin(), l.shape.end()), max = dims;
    if (l.growable) max[0] = H5S_UNLIMITED;
    Owned space{H5Screate_simple(static_cast<int>(dims.size()), dims.data(), max.data()), H5Sclose};
    Owned create{H5Pcreate(H5P_DATASET_CREATE), H5Pclose};
    if (!l.chunks.empty()) {
        const std::vector<hsize_t> chunks(l.chunks.begin(), l.chunks.end());
        if (H5Pset_chunk(create.id, static_cast<int>(chunks.size()), chunks.data()) < 0)
            refused("chunks");
    }
    if (l.gzip) H5Pset_deflate(create.id, static_cast<unsigned>(l.gzip));
    if (l.unknown_filter) {
        const H5Z_class2_t filter{H5Z_CLASS_T_VERS, l.unknown_filter, 1,       1,
                                  "pass-through",   nullptr,          nullptr, pass_through};
        if (H5Zregister(&filter) < 0 ||
            H5Pset_filter(create.id, l.unknown_filter, H5Z_FLAG_MANDATORY, 0, nullptr) < 0)
            refused("filter");
    }
    if (!l.virtual_file.empty() && H5Pset_virtual(create.id, space.id, l.virtual_file.c_str(),
                                                  l.virtual_dataset.c_str(), space.id) < 0)
        refused("virtual mapping");
    std::uint64_t bytes = 1;
    for (hsize_t d : dims)
        bytes *= d;
    if (!l.external_file.empty() &&
        H5Pset_external(create.id, l.external_file.c_str(), 0, static_cast<hsize_t>(bytes)) < 0)
        refused("external file");
    Owned dataset{H5Dcreate2(file.id, l.dataset.c_str(), H5T_STD_U8LE, space.id, H5P_DEFAULT,
                             create.id, H5P_DEFAULT),
                  H5Dclose};
    if (dataset.id < 0) refused("cannot create " + l.dataset);
    if (!l.virtual_file.empty() || !l.external_file.empty()) return; // their data is elsewhere
    std::vector<unsigned char> data(bytes);
    for (std::size_t i = 0; i < data.size(); ++i)
        data[i] = static_cast<unsigned char>(i % 251);
    if (H5Dwrite(dataset.id, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()) < 0)
        refused("cannot write " + l.dataset);
}

} // namespace loaderlens::probes
