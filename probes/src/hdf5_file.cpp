// SPDX-License-Identifier: MIT
#include "hdf5_file.hpp"

#include "hdf5_safety.hpp"
#include "loaderlens/probes/loader.hpp"
#include "worker.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <string_view>
#include <sys/stat.h>
#include <unistd.h>

namespace loaderlens::probes {

namespace {

constexpr std::string_view signature{"\x89HDF\r\n\x1a\n", 8};

[[noreturn]] void fail(const std::string& path, const std::string& what) {
    throw DatasetError(path + ": " + what);
}

// Closes an HDF5 identifier with its own close function on every exit path.
struct Handle {
    hid_t id = -1;
    herr_t (*close)(hid_t) = nullptr;
    ~Handle() {
        if (id >= 0 && close) close(id);
    }
};

herr_t keep_innermost(unsigned n, const H5E_error2_t* error, void* out) {
    if (n == 0 && error->desc) *static_cast<std::string*>(out) = error->desc;
    return 0;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
    std::string out = "(";
    for (std::size_t i = 0; i < shape.size(); ++i)
        out += (i ? ", " : "") + std::to_string(shape[i]);
    return out + (shape.size() == 1 ? ",)" : ")");
}

// numpy's name of a fixed-size integer or float type ("<f4", "|u1"), empty when unsupported.
std::string numpy_type(hid_t type) {
    const H5T_class_t type_class = H5Tget_class(type);
    const std::size_t size = H5Tget_size(type);
    if (type_class == H5T_ENUM) { // h5py stores numpy bool as an enum of int8
        Handle base{H5Tget_super(type), H5Tclose};
        return base.id >= 0 && H5Tget_size(base.id) == 1 ? "|b1" : "";
    }
    if (type_class != H5T_INTEGER && type_class != H5T_FLOAT) return "";
    if (size != 1 && size != 2 && size != 4 && size != 8) return "";
    const char order = size == 1 ? '|' : H5Tget_order(type) == H5T_ORDER_BE ? '>' : '<';
    char kind = 'f';
    if (type_class == H5T_INTEGER) kind = H5Tget_sign(type) == H5T_SGN_NONE ? 'u' : 'i';
    return std::string(1, order) + kind + std::to_string(size);
}

std::string class_name(H5T_class_t type_class) {
    switch (type_class) {
    case H5T_COMPOUND:
        return "compound";
    case H5T_STRING:
        return "string";
    case H5T_VLEN:
        return "variable-length";
    case H5T_REFERENCE:
        return "reference";
    case H5T_ARRAY:
        return "array";
    case H5T_OPAQUE:
        return "opaque";
    case H5T_BITFIELD:
        return "bitfield";
    case H5T_TIME:
        return "time";
    default:
        return "this";
    }
}

// The names of the datasets directly in the root group (at most a few: only to pick the one).
herr_t collect_dataset(hid_t group, const char* name, const H5L_info_t*, void* out) {
    H5O_info_t info{};
    if (H5Oget_info_by_name2(group, name, &info, H5O_INFO_BASIC, H5P_DEFAULT) >= 0 &&
        info.type == H5O_TYPE_DATASET)
        static_cast<std::vector<std::string>*>(out)->push_back(name);
    return 0;
}

std::string filter_name(H5Z_filter_t filter) {
    switch (filter) {
    case H5Z_FILTER_DEFLATE:
        return "deflate";
    case H5Z_FILTER_SHUFFLE:
        return "shuffle";
    case H5Z_FILTER_FLETCHER32:
        return "fletcher32";
    case H5Z_FILTER_SZIP:
        return "szip";
    default:
        return "filter " + std::to_string(filter);
    }
}

} // namespace

// HDF5 reads through its own file driver (pread into its chunk cache): the map and advice knobs
// have nothing to act on, and the HDF5 knobs nothing elsewhere.
void validate_hdf5_options(const LoaderOptions& o, const DatasetLayout& layout) {
    if (layout.kind != DatasetKind::hdf5) {
        const char* flag = o.chunk_cache_bytes               ? "--chunk-cache"
                           : !o.hdf5_dataset.empty()         ? "--hdf5-dataset"
                           : o.hdf5_open == Hdf5Open::parent ? "--hdf5-open"
                                                             : nullptr;
        if (flag)
            throw LoaderError(std::string(flag) + " is for HDF5 files; " + layout.path + " is " +
                              to_string(layout.kind));
        return;
    }
    if (o.read == ReadMode::mmap_copy)
        throw LoaderError("--read mmap-copy: HDF5 reads with pread through its own driver; "
                          "leave --read out (or pread)");
    if (o.advice != Advice::normal)
        throw LoaderError("--advice " + std::string(to_string(o.advice)) +
                          ": HDF5 reads through its own file descriptor; not supported for HDF5");
    if (o.chunk_cache_bytes && (*o.chunk_cache_bytes < 0 || *o.chunk_cache_bytes > (1LL << 40)))
        throw LoaderError("--chunk-cache " + std::to_string(*o.chunk_cache_bytes) +
                          ": expected 0 to 1 TiB");
}

void silence_hdf5_errors() {
    static const bool done = [] {
        H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
        // A file names its filters: no plugin it names is loaded (HDF5_PLUGIN_PATH), only the
        // filters libhdf5 carries are accepted (hdf5_safety.hpp).
        H5PLset_loading_state(0);
        return true;
    }();
    (void)done;
}

std::string hdf5_error_text() {
    std::string text;
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, keep_innermost, &text);
    H5Eclear2(H5E_DEFAULT);
    return text.empty() ? "HDF5 gave no reason" : text;
}

bool has_hdf5_signature(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(path, std::string("cannot open (") + std::strerror(errno) + ")");
    struct stat st {};
    bool found = false;
    if (::fstat(fd, &st) == 0)
        for (off_t offset = 0; !found && offset + 8 <= st.st_size;
             offset = offset == 0 ? 512 : offset * 2) {
            char bytes[8] = {};
            ssize_t n;
            do
                n = ::pread(fd, bytes, sizeof bytes, offset);
            while (n < 0 && errno == EINTR);
            if (n != 8) break;
            found = std::string_view(bytes, 8) == signature;
        }
    ::close(fd);
    return found;
}

DatasetLayout inspect_hdf5(const std::string& path, const std::string& dataset_name) {
    silence_hdf5_errors();
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) fail(path, std::strerror(errno));
    Handle file{H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose};
    if (file.id < 0) fail(path, "not a readable HDF5 file (" + hdf5_error_text() + ")");
    std::string name = dataset_name;
    if (name.empty()) {
        std::vector<std::string> names;
        hsize_t index = 0;
        H5Literate(file.id, H5_INDEX_NAME, H5_ITER_NATIVE, &index, collect_dataset, &names);
        H5Eclear2(H5E_DEFAULT);
        name = names.size() == 1 ? names.front() : "data";
    }
    if (!name.starts_with("/")) name = "/" + name;
    const std::string where = path + ": dataset " + name;
    // H5Lexists walks the path one link at a time: "a/b" with no "a" is false, not an error.
    const htri_t exists = H5Lexists(file.id, name.c_str(), H5P_DEFAULT);
    H5Eclear2(H5E_DEFAULT);
    if (exists <= 0) fail(path, "no dataset " + name + " (pick one with --hdf5-dataset NAME)");
    // A virtual dataset's sources are not opened to find its extent (it is refused below).
    Handle access{H5Pcreate(H5P_DATASET_ACCESS), H5Pclose};
    if (access.id >= 0) H5Pset_virtual_view(access.id, H5D_VDS_FIRST_MISSING);
    Handle dataset{H5Dopen2(file.id, name.c_str(), access.id >= 0 ? access.id : H5P_DEFAULT),
                   H5Dclose};
    if (dataset.id < 0) fail(where, "cannot open it as a dataset (" + hdf5_error_text() + ")");
    Handle type{H5Dget_type(dataset.id), H5Tclose};
    Handle space{H5Dget_space(dataset.id), H5Sclose};
    Handle plist{H5Dget_create_plist(dataset.id), H5Pclose};
    if (type.id < 0 || space.id < 0 || plist.id < 0)
        fail(where, "cannot read its type or shape (" + hdf5_error_text() + ")");
    const std::string type_name = numpy_type(type.id);
    if (type_name.empty())
        fail(where, class_name(H5Tget_class(type.id)) +
                        " elements are not supported (integers, floats and bool only)");
    const int rank = H5Sget_simple_extent_ndims(space.id);
    if (rank < 2)
        fail(where, "rank " + std::to_string(rank) +
                        ": needs 2 or more dimensions (axis 0 indexes the samples)");
    std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
    H5Sget_simple_extent_dims(space.id, dims.data(), nullptr);
    // Before anything reads it: what libhdf5 1.10 would crash on or read from elsewhere.
    const std::string refused = hdf5_safety::refusal(
        dataset.id, plist.id, dims, H5Tget_size(type.id), static_cast<std::uint64_t>(st.st_size));
    if (!refused.empty()) fail(where, refused);

    DatasetLayout layout;
    layout.kind = DatasetKind::hdf5;
    layout.path = path;
    layout.data_file = path;
    auto& h = layout.hdf5;
    h.dataset = name;
    h.type = type_name;
    h.file_bytes = st.st_size;
    std::int64_t record_bytes = static_cast<std::int64_t>(H5Tget_size(type.id));
    for (std::size_t i = 0; i < dims.size(); ++i) {
        h.shape.push_back(static_cast<std::int64_t>(dims[i]));
        if (i > 0 && __builtin_mul_overflow(record_bytes, h.shape.back(), &record_bytes))
            fail(where, "the record size overflows 64 bits");
    }
    if (h.shape.front() == 0) fail(where, "empty dataset (shape " + shape_text(h.shape) + ")");
    if (record_bytes == 0) fail(where, "records of 0 bytes (shape " + shape_text(h.shape) + ")");
    layout.record_count = h.shape.front();
    layout.record_bytes = record_bytes;

    switch (H5Pget_layout(plist.id)) {
    case H5D_CHUNKED: {
        h.storage = "chunked";
        std::vector<hsize_t> chunks(dims.size());
        H5Pget_chunk(plist.id, rank, chunks.data());
        h.chunk_bytes = static_cast<std::int64_t>(H5Tget_size(type.id));
        for (hsize_t c : chunks) {
            h.chunks.push_back(static_cast<std::int64_t>(c));
            h.chunk_bytes *= static_cast<std::int64_t>(c);
        }
        break;
    }
    case H5D_COMPACT:
        h.storage = "compact";
        break;
    default:
        h.storage = "contiguous";
    }
    const int filters = H5Pget_nfilters(plist.id);
    for (int i = 0; i < filters; ++i) {
        unsigned flags = 0;
        std::size_t values = 0;
        char filter[64] = {};
        unsigned config = 0;
        h.filters.push_back(
            filter_name(H5Pget_filter2(plist.id, static_cast<unsigned>(i), &flags, &values, nullptr,
                                       sizeof filter, filter, &config)));
    }
    layout.description =
        "hdf5 " + name + " " + type_name + " " + shape_text(h.shape) + " " + h.storage;
    if (!h.chunks.empty()) layout.description += " " + shape_text(h.chunks);
    for (const std::string& f : h.filters)
        layout.description += " " + f;
    return layout;
}

Hdf5Dataset::Hdf5Dataset(const DatasetLayout& layout, std::int64_t chunk_cache_bytes)
    : layout_(layout) {
    silence_hdf5_errors();
    auto changed = [&](const std::string& what) {
        close();
        return LoaderError(layout_.path + ": " + what + " (changed since it was inspected?)");
    };
    file_ = H5Fopen(layout_.path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file_ < 0) throw changed("cannot open as HDF5: " + hdf5_error_text());
    access_ = H5Pcreate(H5P_DATASET_ACCESS);
    // H5D_CHUNK_CACHE_NSLOTS_DEFAULT / W0_DEFAULT: only the size changes with --chunk-cache.
    if (access_ >= 0 && chunk_cache_bytes >= 0)
        H5Pset_chunk_cache(access_, H5D_CHUNK_CACHE_NSLOTS_DEFAULT,
                           static_cast<std::size_t>(chunk_cache_bytes), H5D_CHUNK_CACHE_W0_DEFAULT);
    dataset_ = H5Dopen2(file_, layout_.hdf5.dataset.c_str(), access_);
    if (dataset_ < 0)
        throw changed("cannot open " + layout_.hdf5.dataset + ": " + hdf5_error_text());
    type_ = H5Dget_type(dataset_);
    space_ = H5Dget_space(dataset_);
    const int rank = space_ >= 0 ? H5Sget_simple_extent_ndims(space_) : -1;
    if (type_ < 0 || rank != static_cast<int>(layout_.hdf5.shape.size()))
        throw changed(layout_.hdf5.dataset + " has another shape");
    dims_.resize(static_cast<std::size_t>(rank));
    H5Sget_simple_extent_dims(space_, dims_.data(), nullptr);
    if (static_cast<std::int64_t>(dims_[0]) != layout_.record_count)
        throw changed(layout_.hdf5.dataset + " has another shape");
}

Hdf5Dataset::~Hdf5Dataset() {
    close();
}

void Hdf5Dataset::close() {
    if (space_ >= 0) H5Sclose(space_);
    if (type_ >= 0) H5Tclose(type_);
    if (dataset_ >= 0) H5Dclose(dataset_);
    if (access_ >= 0) H5Pclose(access_);
    if (file_ >= 0) H5Fclose(file_);
    space_ = type_ = dataset_ = access_ = file_ = -1;
}

void Hdf5Dataset::read(std::int64_t index, std::int64_t count, std::byte* dest) {
    const std::string records =
        count == 1 ? "record " + std::to_string(index)
                   : "records " + std::to_string(index) + ".." + std::to_string(index + count - 1);
    std::vector<hsize_t> start(dims_.size(), 0), counts = dims_;
    start[0] = static_cast<hsize_t>(index);
    counts[0] = static_cast<hsize_t>(count);
    Handle memory{H5Screate_simple(static_cast<int>(counts.size()), counts.data(), nullptr),
                  H5Sclose};
    herr_t rc =
        H5Sselect_hyperslab(space_, H5S_SELECT_SET, start.data(), nullptr, counts.data(), nullptr);
    if (rc >= 0 && memory.id >= 0) {
        const ReadCrashGuard guard(layout_.path, records + " of " + layout_.hdf5.dataset);
        rc = H5Dread(dataset_, type_, memory.id, space_, H5P_DEFAULT, dest);
    }
    if (rc >= 0 && memory.id >= 0) return;
    const std::string why = hdf5_error_text();
    // A file cut under the loader is a failed run (exit 1), as a mapped file's SIGBUS is.
    struct stat st {};
    if (::stat(layout_.path.c_str(), &st) == 0 && st.st_size < layout_.hdf5.file_bytes)
        throw LoaderError(layout_.path + ": shrank to " + std::to_string(st.st_size) +
                          " bytes since it was inspected (" +
                          std::to_string(layout_.hdf5.file_bytes) + "); " + records + ": " + why);
    throw DatasetDamage(layout_.path,
                        records + " of " + layout_.hdf5.dataset + " cannot be read: " + why);
}

} // namespace loaderlens::probes
