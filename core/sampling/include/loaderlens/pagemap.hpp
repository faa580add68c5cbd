// SPDX-License-Identifier: MIT
// Which pages of a process's mappings are present (mapped in its page tables), from
// /proc/PID/pagemap: the PAGEMAP_SCAN ioctl (Linux >= 6.7) returns runs of matching pages and is
// several times cheaper than reading 8 bytes per page, which is the fallback.
// Reading another process's pagemap needs PTRACE_MODE_READ, like smaps.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace loaderlens {

// One mapping of a regular file, from a line of /proc/PID/maps.
struct FileMapping {
    std::uint64_t start = 0, end = 0; // virtual addresses, end exclusive
    std::uint64_t offset = 0;         // file offset of `start`
    std::uint64_t device = 0;         // makedev(major, minor) as in st_dev
    std::uint64_t inode = 0;
    bool executable = false;
    bool shared = false; // MAP_SHARED: every present page is the file's own page
    std::string path;
};

// The file mappings in the text of /proc/PID/maps: lines with an inode and an absolute path, not
// "(deleted)" (the path no longer names the mapped file).
std::vector<FileMapping> parse_file_mappings(std::string_view maps_text);

enum class PagemapMethod { scan_ioctl, read_entries };
const char* to_string(PagemapMethod method);

class PagemapReader {
  public:
    // Opens /proc/PID/pagemap; see error(). `allow_scan` false forces the 8-byte entry reads (what
    // kernels before 6.7 give); with it true, the first refusal of PAGEMAP_SCAN (unknown to the
    // kernel, refused by a seccomp filter) switches to them for good, and method() says so.
    explicit PagemapReader(pid_t pid, bool allow_scan = true);
    ~PagemapReader();
    PagemapReader(PagemapReader&& other) noexcept;
    PagemapReader& operator=(PagemapReader&& other) noexcept;
    PagemapReader(const PagemapReader&) = delete;
    PagemapReader& operator=(const PagemapReader&) = delete;

    // errno of the last failure (open or read), 0 when all went well.
    int error() const { return error_; }
    PagemapMethod method() const { return method_; }

    // Calls on_run(first, end) for each run of virtual addresses in [start, end) whose pages are
    // present and file-backed (a copy-on-write copy of a private file page is anonymous and left
    // out). `shared_mapping`: the range is a MAP_SHARED file mapping, where every present page is
    // a file page, so PAGEMAP_SCAN need not check (checking reads each page's struct page:
    // 2.5-10x dearer). Returns false on a read error (error() says which; ESRCH/ENOENT: the
    // process is gone).
    bool for_each_present(std::uint64_t start, std::uint64_t end,
                          const std::function<void(std::uint64_t, std::uint64_t)>& on_run,
                          bool shared_mapping = false);

  private:
    bool scan(std::uint64_t start, std::uint64_t end,
              const std::function<void(std::uint64_t, std::uint64_t)>& on_run, bool file_check,
              bool& reported);
    bool read_entries(std::uint64_t start, std::uint64_t end,
                      const std::function<void(std::uint64_t, std::uint64_t)>& on_run);

    int fd_ = -1;
    int error_ = 0;
    PagemapMethod method_ = PagemapMethod::scan_ioctl;
    std::vector<std::uint64_t> buffer_;
};

} // namespace loaderlens
