// SPDX-License-Identifier: MIT
#include "loaderlens/pagemap.hpp"

#include "loaderlens/proc_text.hpp"

#include <cerrno>
#include <charconv>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <utility>

namespace loaderlens {

namespace {

// The PAGEMAP_SCAN ABI (include/uapi/linux/fs.h, Linux 6.7); Debian 12's headers predate it.
constexpr std::uint64_t page_is_file = 1 << 2;
constexpr std::uint64_t page_is_present = 1 << 3;
struct PageRegion {
    std::uint64_t start, end, categories;
};
struct PmScanArg {
    std::uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
    std::uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};
constexpr unsigned long pagemap_scan_request = _IOWR('f', 16, PmScanArg);

// pagemap entry bits (Documentation/admin-guide/mm/pagemap.rst).
constexpr std::uint64_t entry_present = 1ULL << 63;
constexpr std::uint64_t entry_file_or_shared_anon = 1ULL << 61;

std::uint64_t page_bytes() {
    static const auto size = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    return size;
}

std::string_view next_field(std::string_view& line) {
    const std::size_t start = line.find_first_not_of(' ');
    if (start == std::string_view::npos) {
        line = {};
        return {};
    }
    line.remove_prefix(start);
    const std::size_t end = line.find(' ');
    std::string_view field = line.substr(0, end);
    line = end == std::string_view::npos ? std::string_view{} : line.substr(end);
    return field;
}

bool hex(std::string_view text, std::uint64_t& out) {
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out, 16);
    return ec == std::errc{} && ptr == text.data() + text.size();
}

} // namespace

std::vector<FileMapping> parse_file_mappings(std::string_view text) {
    std::vector<FileMapping> out;
    while (!text.empty()) {
        const std::size_t eol = text.find('\n');
        std::string_view line = text.substr(0, eol);
        text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
        // "start-end perms offset major:minor inode   path"
        const std::string_view range = next_field(line), perms = next_field(line);
        const std::string_view offset = next_field(line), dev = next_field(line);
        const std::string_view inode = next_field(line);
        const std::size_t path_start = line.find_first_not_of(' ');
        if (path_start == std::string_view::npos) continue;
        std::string_view path = line.substr(path_start);
        if (path.empty() || path[0] != '/' || path.ends_with(" (deleted)")) continue;
        FileMapping m;
        const std::size_t dash = range.find('-'), colon = dev.find(':');
        std::uint64_t major = 0, minor = 0;
        if (dash == std::string_view::npos || colon == std::string_view::npos ||
            !hex(range.substr(0, dash), m.start) || !hex(range.substr(dash + 1), m.end) ||
            !hex(offset, m.offset) || !hex(dev.substr(0, colon), major) ||
            !hex(dev.substr(colon + 1), minor) || perms.size() < 4)
            continue;
        auto [ptr, ec] = std::from_chars(inode.data(), inode.data() + inode.size(), m.inode);
        if (ec != std::errc{} || m.inode == 0) continue;
        m.device = makedev(static_cast<unsigned>(major), static_cast<unsigned>(minor));
        m.executable = perms[2] == 'x';
        m.shared = perms[3] == 's';
        m.path = maps_path(path);
        out.push_back(std::move(m));
    }
    return out;
}

const char* to_string(PagemapMethod method) {
    return method == PagemapMethod::scan_ioctl ? "PAGEMAP_SCAN" : "pagemap";
}

PagemapReader::PagemapReader(pid_t pid, bool allow_scan)
    : method_(allow_scan ? PagemapMethod::scan_ioctl : PagemapMethod::read_entries) {
    fd_ = ::open(("/proc/" + std::to_string(pid) + "/pagemap").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) error_ = errno;
}

PagemapReader::~PagemapReader() {
    if (fd_ >= 0) ::close(fd_);
}

PagemapReader::PagemapReader(PagemapReader&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), error_(other.error_), method_(other.method_),
      buffer_(std::move(other.buffer_)) {}

PagemapReader& PagemapReader::operator=(PagemapReader&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = std::exchange(other.fd_, -1);
        error_ = other.error_;
        method_ = other.method_;
        buffer_ = std::move(other.buffer_);
    }
    return *this;
}

bool PagemapReader::for_each_present(
    std::uint64_t start, std::uint64_t end,
    const std::function<void(std::uint64_t, std::uint64_t)>& on_run, bool shared_mapping) {
    if (fd_ < 0) return false;
    error_ = 0;
    if (method_ == PagemapMethod::scan_ioctl) {
        bool reported = false;
        if (scan(start, end, on_run, !shared_mapping, reported)) return true;
        // The process is gone (nothing to read either way), or the ioctl failed after some runs
        // were reported (reading the entries would report them twice).
        if (error_ == ESRCH || error_ == ENOENT || reported) return false;
        // Refused: kernels before 6.7 do not know the ioctl (ENOTTY), a seccomp filter or an LSM
        // may refuse it (EPERM, EACCES, ENOSYS), a kernel may reject an argument (EINVAL). The
        // 8-byte entries answer the same question: read them from then on.
        method_ = PagemapMethod::read_entries;
        error_ = 0;
    }
    return read_entries(start, end, on_run);
}

bool PagemapReader::scan(std::uint64_t start, std::uint64_t end,
                         const std::function<void(std::uint64_t, std::uint64_t)>& on_run,
                         bool file_check, bool& reported) {
    const std::uint64_t categories = page_is_present | (file_check ? page_is_file : 0);
    PageRegion regions[256];
    while (start < end) {
        PmScanArg arg{};
        arg.size = sizeof arg;
        arg.start = start;
        arg.end = end;
        arg.vec = reinterpret_cast<std::uint64_t>(regions);
        arg.vec_len = std::size(regions);
        arg.category_mask = categories;
        arg.return_mask = categories;
        const int found = ::ioctl(fd_, pagemap_scan_request, &arg);
        if (found < 0) {
            error_ = errno;
            return false;
        }
        for (int i = 0; i < found; ++i)
            on_run(regions[i].start, regions[i].end);
        reported = reported || found > 0;
        // walk_end says where the kernel stopped: the end, or where the vector filled up.
        if (arg.walk_end <= start) break;
        start = arg.walk_end;
    }
    return true;
}

bool PagemapReader::read_entries(std::uint64_t start, std::uint64_t end,
                                 const std::function<void(std::uint64_t, std::uint64_t)>& on_run) {
    const std::uint64_t page = page_bytes();
    constexpr std::uint64_t chunk = 4096; // entries per read: 32 KiB
    buffer_.resize(chunk);
    std::uint64_t run_start = 0;
    bool in_run = false;
    std::uint64_t address = start;
    while (address < end) {
        const std::uint64_t count = std::min(chunk, (end - address) / page);
        if (count == 0) break;
        const auto offset = static_cast<off_t>(address / page * sizeof(std::uint64_t));
        const ssize_t got = ::pread(fd_, buffer_.data(), count * sizeof(std::uint64_t), offset);
        if (got < 0) {
            error_ = errno;
            return false;
        }
        const auto entries = static_cast<std::uint64_t>(got) / sizeof(std::uint64_t);
        if (entries == 0) break;
        for (std::uint64_t i = 0; i < entries; ++i, address += page) {
            const std::uint64_t e = buffer_[i];
            const bool present = (e & entry_present) && (e & entry_file_or_shared_anon);
            if (present && !in_run) {
                run_start = address;
                in_run = true;
            } else if (!present && in_run) {
                on_run(run_start, address);
                in_run = false;
            }
        }
    }
    if (in_run) on_run(run_start, address);
    return true;
}

} // namespace loaderlens
