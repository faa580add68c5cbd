// SPDX-License-Identifier: MIT
#include "loaderlens/system_sampler.hpp"

#include "loaderlens/proc_text.hpp"

#include <array>
#include <libproc2/meminfo.h>
#include <string_view>
#include <sys/statvfs.h>

namespace loaderlens {

namespace {

// A figure of the sample, the libproc2 item that gives it and its name in /proc/meminfo.
struct MeminfoFigure {
    Kib SystemSample::*field;
    meminfo_item item;
    std::string_view name;
};
constexpr std::array<MeminfoFigure, 9> meminfo_figures{{
    {&SystemSample::mem_total, MEMINFO_MEM_TOTAL, "MemTotal"},
    {&SystemSample::mem_available, MEMINFO_MEM_AVAILABLE, "MemAvailable"},
    {&SystemSample::cached, MEMINFO_MEM_CACHED, "Cached"},
    {&SystemSample::shmem, MEMINFO_MEM_SHARED, "Shmem"},
    {&SystemSample::dirty, MEMINFO_MEM_DIRTY, "Dirty"},
    {&SystemSample::active_file, MEMINFO_MEM_ACTIVE_FILE, "Active(file)"},
    {&SystemSample::inactive_file, MEMINFO_MEM_INACTIVE_FILE, "Inactive(file)"},
    {&SystemSample::writeback, MEMINFO_MEM_WRITEBACK, "Writeback"},
    {&SystemSample::kreclaimable, MEMINFO_MEM_KERNEL_RECLAIM, "KReclaimable"},
}};

// Whether `text` (a /proc/meminfo) has a line for `name`.
bool has_line(std::string_view text, std::string_view name) {
    for (std::size_t at = 0; at < text.size();) {
        const std::size_t end = std::min(text.find('\n', at), text.size());
        const std::string_view line = text.substr(at, end - at);
        if (line.starts_with(name) && line.size() > name.size() && line[name.size()] == ':')
            return true;
        at = end + 1;
    }
    return false;
}

} // namespace

// libproc2 zeroes every field before it parses /proc/meminfo and fills in MemFree for a missing
// MemAvailable, so its values cannot tell "absent" from 0. Which names this kernel's meminfo has
// is fixed for the boot: learned from one direct read when the context is made, then every
// reading goes through libproc2 alone.
struct SystemSampler::Meminfo {
    meminfo_info* info = nullptr;
    std::array<meminfo_item, meminfo_figures.size()> items{};
    std::array<bool, meminfo_figures.size()> present{};

    Meminfo() {
        const auto text = read_text_file("/proc/meminfo");
        if (!text || procps_meminfo_new(&info) < 0) {
            info = nullptr;
            return;
        }
        for (std::size_t i = 0; i < meminfo_figures.size(); ++i) {
            items[i] = meminfo_figures[i].item;
            present[i] = has_line(*text, meminfo_figures[i].name);
        }
    }
    ~Meminfo() {
        if (info) procps_meminfo_unref(&info);
    }
    Meminfo(const Meminfo&) = delete;
    Meminfo& operator=(const Meminfo&) = delete;

    void read(SystemSample& s) {
        if (!info) return;
        // select re-reads the file at every call; procps_meminfo_get would serve the values
        // of the same second again (it re-reads at most once a second).
        meminfo_stack* stack =
            procps_meminfo_select(info, items.data(), static_cast<int>(items.size()));
        if (!stack) return;
        for (std::size_t i = 0; i < meminfo_figures.size(); ++i)
            if (present[i])
                s.*meminfo_figures[i].field =
                    static_cast<std::int64_t>(stack->head[i].result.ul_int);
    }
};

SystemSampler::SystemSampler() : meminfo_(std::make_unique<Meminfo>()) {}
SystemSampler::~SystemSampler() = default;

SystemSample SystemSampler::read() {
    SystemSample s;
    // A context that could not be made (no /proc/meminfo yet, out of memory) is tried again.
    if (!meminfo_->info) meminfo_ = std::make_unique<Meminfo>();
    meminfo_->read(s);
    struct statvfs fs {};
    if (statvfs("/dev/shm", &fs) == 0) {
        const std::int64_t block = static_cast<std::int64_t>(fs.f_frsize);
        s.devshm_size = static_cast<std::int64_t>(fs.f_blocks) * block / 1024;
        s.devshm_used = static_cast<std::int64_t>(fs.f_blocks - fs.f_bfree) * block / 1024;
    }
    return s;
}

SystemSample read_system() {
    thread_local SystemSampler sampler;
    return sampler.read();
}

} // namespace loaderlens
